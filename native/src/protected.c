/* protected.c - the protected names: one list for the sandbox and every binding.
 *
 * The top-level workspace names that configure the repository or an agent
 * (directories) or would run code for the user or reconfigure a tool
 * (files). The Linux sandbox keeps each exact name read-only (a bind, or a
 * read-only placeholder where it is missing); Python's verification
 * snapshot and guardrails read the same list through a3s_protected_name,
 * so no layer keeps a copy. Compiled on every platform.
 *
 * What makes a name a control file: a tool on the host reads it and acts on
 * it, so a command that writes it acts on the host later. That is git (its
 * hooks and config), the MCP server lists agents start servers from, agent
 * hooks (commands an agent runs on its events) and agent rules (instructions
 * every later session of that agent follows). Per agent, with the project
 * files that do this:
 *   .a3s .agents .codex .claude   our own and Codex's and Claude Code's config
 *   .mcp.json                      Claude Code's project MCP servers
 *   .vscode .idea                  editor tasks, launch configs, .vscode/mcp.json
 *   .cursor .cursorrules           Cursor: mcp.json, rules/, hooks.json; legacy rules
 *   .gemini                        Gemini CLI: settings.json (mcpServers), commands
 *   .roo .roomodes .roorules       Roo Code: mcp.json, rules/; custom modes; legacy rules
 *   .kiro                          Kiro: settings/mcp.json, hooks/, steering/
 *   .continue .continuerc.json     Continue: mcpServers/, rules/; legacy config
 *   .windsurf .windsurfrules       Windsurf: rules/, workflows/; legacy rules
 *   .amazonq                       Amazon Q Developer: mcp.json, default.json, rules/
 *   .cline .clinerules             Cline: hooks, workflows; rules (a file or a directory)
 *   .gitmodules .ripgreprc         git submodule commands; ripgrep's options
 *   .bashrc ... .profile           shell start-up, for a workspace that is a home
 * Not protected: .github (its workflows run in CI, not on this host, and a
 * project edits them like code; .github/copilot-instructions.md is text an
 * agent reads, as README.md, AGENTS.md and CLAUDE.md are, which the project
 * keeps and the agent is asked to update). Every name costs a placeholder
 * in the workspace while a sandbox lives where it is missing
 * (docs/security.md), and protect_names keeps a bit per name (at most 64). */
#include "internal.h"

#include <stddef.h>

const char *const a3s_protected_dirs[] = {".git",     ".a3s",      ".agents",  ".codex",
                                          ".claude",  ".vscode",   ".idea",    ".cursor",
                                          ".gemini",  ".roo",      ".kiro",    ".continue",
                                          ".windsurf", ".amazonq", ".cline"};
const char *const a3s_protected_files[] = {
    ".gitmodules",  ".mcp.json",     ".ripgreprc",   ".bashrc",   ".bash_profile",
    ".zshrc",       ".zprofile",     ".profile",     ".cursorrules", ".windsurfrules",
    ".clinerules",  ".roomodes",     ".roorules",    ".continuerc.json"};
const size_t a3s_protected_ndirs = sizeof a3s_protected_dirs / sizeof a3s_protected_dirs[0];
const size_t a3s_protected_nfiles = sizeof a3s_protected_files / sizeof a3s_protected_files[0];

A3S_API int a3s_protected_name(size_t index, const char **name, uint64_t *flags, a3s_error *err) {
    if (!name || !flags)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_protected_name: NULL argument");
    if (index < a3s_protected_ndirs) {
        *name = a3s_protected_dirs[index];
        *flags = A3S_PROTECTED_DIR;
        return a3s_ok(err);
    }
    index -= a3s_protected_ndirs;
    if (index < a3s_protected_nfiles) {
        *name = a3s_protected_files[index];
        *flags = 0;
        return a3s_ok(err);
    }
    return a3s_fail(err, A3S_E_RANGE, 0, (int64_t)(a3s_protected_ndirs + a3s_protected_nfiles),
                    "a3s_protected_name: index past the last protected name");
}
