"""Permission hooks of the agents people already run, answered by codeward's kernel.

``codeward hook claude-code`` (docs/integrations.md) maps a Claude Code tool call
to the codeward tool that does the same and lets the invocation kernel decide it:
guardrails, mode, policy, the same path resolution as a session.
"""

from ._claude import EVENTS, HookAnswer, answer_claude_code, deny_answer, map_tool

__all__ = ["EVENTS", "HookAnswer", "answer_claude_code", "deny_answer", "map_tool"]
