'use strict';
// PermissionPolicy: deny, allow and ask rule lists compiled once into the C
// rule set. Evaluation mirrors python/codeward/policy/_policy.py exactly:
// disabled allows everything; otherwise the first deny, else allow, else ask
// rule that matches decides, and the default decides when none does. A
// multi-file read is decided per file, the strictest answer winning; a
// search's allow rules match only its strict form (see subject.js).

const native = require('./native');
const { fromNative } = require('./errors');
const { parseOptions, LISTS } = require('./policy-options');
const { canonicalTool, strictSearchSubject, subjects } = require('./subject');

const LIST_CODES = { deny: native.LIST_DENY, allow: native.LIST_ALLOW, ask: native.LIST_ASK };
const BY_LIST_CODE = {
  [native.LIST_DENY]: 'deny',
  [native.LIST_ALLOW]: 'allow',
  [native.LIST_ASK]: 'ask',
};
const SEARCH_MODE_TOOLS = new Set(['grep', 'glob', 'bm25']);

class PermissionPolicy {
  #ruleset = new native.NativeRuleset();
  #rules = []; // [listName, raw] per rule index, the id given to the C core
  #lists;
  #defaultDecision;
  #enabled;
  #views = null; // rule views, read from the C core on first use

  /**
   * @param {{deny?: Array<string|{rule: string}>, allow?: Array<string|{rule: string}>,
   *          ask?: Array<string|{rule: string}>, defaultDecision?: 'allow'|'deny'|'ask',
   *          enabled?: boolean}} [options]
   */
  constructor(options = undefined) {
    const { lists, defaultDecision, enabled } = parseOptions(options);
    this.#lists = lists;
    this.#defaultDecision = defaultDecision;
    this.#enabled = enabled;
    for (const listName of LISTS) {
      for (const raw of lists[listName]) this.#add(listName, raw);
    }
    // A bash line is decided per simple command in the C core, which needs the default.
    this.#ruleset.setDefault(LIST_CODES[defaultDecision]);
  }

  #add(listName, raw) {
    const index = this.#rules.length;
    try {
      this.#ruleset.add(LIST_CODES[listName], raw, index);
    } catch (err) {
      throw fromNative(err, (msg) => `${listName} rule ${JSON.stringify(raw)}: ${msg}`, raw);
    }
    this.#rules.push([listName, raw]);
  }

  // -- evaluation ------------------------------------------------------------

  /**
   * The decision for one call: 'allow', 'deny' or 'ask'.
   *
   * A multi-file read is decided per file: denied if any file is denied,
   * asked if any is asked or falls to an ask default, allowed only if all
   * are. (Its joined argument string is never matched as a whole: `**`
   * crosses newlines, so read(src/**) would allow src/a with /etc/shadow.)
   * A search's allow rules match only its strict form (see
   * strictSearchSubject), so its query never satisfies a rule's path part.
   */
  check(tool, args = undefined) {
    if (!this.#enabled) return 'allow';
    const [name, each] = subjects(tool, args);
    const strict = strictSearchSubject(tool, args);
    if (strict !== null) {
      const matched = this.#searchMatches(name, each[0], strict);
      const lists = new Set(matched.map((i) => this.#rules[i][0]));
      for (const decision of ['deny', 'allow', 'ask']) if (lists.has(decision)) return decision;
      return this.#defaultDecision;
    }
    let asked = false;
    for (const subject of each) {
      const hit = this.#ruleset.check(name, subject);
      const decision = hit ? BY_LIST_CODE[hit] : this.#defaultDecision;
      if (decision === 'deny') return 'deny';
      if (decision === 'ask') asked = true;
    }
    return asked ? 'ask' : 'allow';
  }

  /**
   * The raw rule strings that match this call, per list, in policy order;
   * for a multi-file read, the rules that match any of its files.
   */
  matchingRules(tool, args = undefined) {
    const [name, each] = subjects(tool, args);
    const strict = strictSearchSubject(tool, args);
    let indices = this.#ruleset.matches(name, each[0]);
    if (strict !== null) indices = this.#searchMatches(name, each[0], strict);
    if (each.length > 1) {
      const union = new Set(indices);
      for (let i = 1; i < each.length; i++) {
        for (const index of this.#ruleset.matches(name, each[i])) union.add(index);
      }
      indices = [...union].sort((a, b) => a - b);
    }
    const found = { deny: [], allow: [], ask: [] };
    for (const index of indices) {
      const [listName, raw] = this.#rules[index];
      found[listName].push(raw);
    }
    return found;
  }

  /**
   * The rules matching a search, in policy order: deny and ask rules that
   * match either form of its argument string, allow rules that match the
   * strict form.
   */
  #searchMatches(name, text, strict) {
    const inStrict = new Set(this.#ruleset.matches(name, strict));
    const loose = this.#ruleset.matches(name, text);
    const union = new Set(loose.filter((i) => this.#rules[i][0] !== 'allow' || inStrict.has(i)));
    for (const i of inStrict) union.add(i);
    return [...union].sort((a, b) => a - b);
  }

  /**
   * False only if every call of `tool` is denied before its arguments are
   * known: a whole-tool deny (a bare rule or Tool(*)), or a default of deny
   * with no allow or ask rule for the tool. A host hides such tools from the
   * model instead of offering calls that can only fail.
   */
  exposesToModel(tool) {
    if (!this.#enabled) return true;
    let name = canonicalTool(tool);
    if (SEARCH_MODE_TOOLS.has(name)) name = 'search';
    const views = this.rules();
    if (views.some((v) => v.list === 'deny' && v.anyArgs && coversTool(v, name))) return false;
    if (this.#defaultDecision === 'deny') {
      return views.some((v) => v.list !== 'deny' && coversTool(v, name));
    }
    return true;
  }

  /**
   * What the exec check holds bash commands to (docs/policy.md, "The exec
   * check"): {deny, ask} patterns of every deny and ask rule covering bash,
   * for a sandbox's exec({execRules}). A bare deny of bash is '*'; a bare
   * ask is left out (it asks for the line, which is what the human
   * approves). Add `approved` (the line's simple commands) after an approval.
   */
  execRules() {
    const deny = [];
    const ask = [];
    if (!this.#enabled) return { deny, ask };
    for (const v of this.rules()) {
      if ((v.list !== 'deny' && v.list !== 'ask') || !coversTool(v, 'bash')) continue;
      if (v.anyArgs) {
        if (v.list === 'deny') deny.push('*');
        continue;
      }
      (v.list === 'deny' ? deny : ask).push(v.pattern);
    }
    return { deny, ask };
  }

  // -- introspection -----------------------------------------------------------

  get enabled() {
    return this.#enabled;
  }

  get defaultDecision() {
    return this.#defaultDecision;
  }

  get deny() {
    return [...this.#lists.deny];
  }

  get allow() {
    return [...this.#lists.allow];
  }

  get ask() {
    return [...this.#lists.ask];
  }

  /**
   * Every rule in evaluation order with its canonical (rewritten) form, as
   * the C core holds it (a3s_ruleset_rule).
   */
  rules() {
    if (this.#views === null) {
      this.#views = this.#rules.map(([listName, raw], index) =>
        makeView(index, listName, raw, this.#ruleset.rule(index)),
      );
    }
    return [...this.#views];
  }

  /** The policy in the snake_case file format of the Python package. */
  toJSON() {
    return {
      deny: this.deny,
      allow: this.allow,
      ask: this.ask,
      default_decision: this.#defaultDecision,
      enabled: this.#enabled,
    };
  }
}

function makeView(index, listName, raw, rule) {
  const { flags } = rule;
  return Object.freeze({
    index,
    list: listName,
    raw,
    tool: rule.tool,
    pattern: rule.pattern,
    flags,
    anyArgs: (flags & native.RULE_ANY_ARGS) !== 0,
    toolGlob: (flags & native.RULE_TOOL_GLOB) !== 0,
    mcpServer: (flags & native.RULE_MCP_SERVER) !== 0,
    rewritten: (flags & native.RULE_REWRITTEN) !== 0,
    prefix: (flags & native.RULE_PREFIX) !== 0,
  });
}

// Compiled tool-name globs per view; views are immutable, so this is safe
// to share and lets the globs go when the policy does.
const toolGlobs = new WeakMap();

/** Whether a rule's tool part names `tool` (already canonical). */
function coversTool(view, tool) {
  if (view.toolGlob) {
    let glob = toolGlobs.get(view);
    if (!glob) {
      glob = new native.NativeGlob(view.tool, true);
      toolGlobs.set(view, glob);
    }
    return glob.match(tool);
  }
  if (view.mcpServer) return tool === view.tool || tool.startsWith(`${view.tool}__`);
  return tool === view.tool;
}

module.exports = { PermissionPolicy };
