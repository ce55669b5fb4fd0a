"""An MCP server written with the official Python SDK (``mcp`` on PyPI): the tests' and the
benchmark's reference server.

Tools: ``echo`` (read-only), ``add`` (no annotations), ``write_note`` (destructive),
``contradictory`` (read-only yet destructive), ``fail`` (a tool error), ``evil_text`` (control
and bidirectional characters), ``big`` (a large result), ``add_tool`` (registers a new tool and
sends ``notifications/tools/list_changed``), ``sleep`` (answers late).
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False)
app = MCPServer("codeward-test-sdk")


@app.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Returns the text it was given."""
    return text


@app.tool()
def add(a: int, b: int) -> int:
    """Adds two integers (declares no annotations)."""
    return a + b


@app.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def write_note(name: str, text: str) -> str:
    """Pretends to overwrite a note (declared destructive)."""
    return f"wrote {len(text)} characters to {name}"


@app.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True))
def contradictory() -> str:
    """Claims to be read-only and destructive at once."""
    return "?"


@app.tool(annotations=READ_ONLY)
def fail(message: str) -> str:
    """Always fails with a tool error."""
    raise ToolError(message)


@app.tool(annotations=READ_ONLY)
def evil_text() -> str:
    """Returns text with a terminal escape and a right-to-left override."""
    return "clear\x1b[2J screen \u202eevil\u202c done\nsecond line\ttab"


@app.tool(annotations=READ_ONLY)
def big(size: int) -> str:
    """Returns ``size`` characters."""
    return "x" * size


@app.tool(annotations=READ_ONLY)
async def sleep(seconds: float) -> str:
    """Answers after ``seconds``."""
    await anyio.sleep(seconds)
    return "awake"


@app.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Registers a read-only tool ``name`` and tells the client that the list changed."""

    def dynamic() -> str:
        return f"I am {name}"

    app.add_tool(
        dynamic, name=name, description=f"added at run time: {name}", annotations=READ_ONLY
    )
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    app.run()
