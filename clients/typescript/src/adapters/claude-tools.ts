// Claude's tool calls as gated calls, by the one table both clients read: clients/conformance/tool_patterns.json
// (copied beside this module when built; the Python client ships the same file). clients/conformance/tool_cases.json
// holds this side and the Python side to the same answers (test/tool-cases.test.js, tests/adapters/test_tool_cases.py).
//
// A map ({tools, patterns, replace}) extends the table as `hitl-hook --map FILE` does: `tools` names more tools,
// `patterns` adds destructive patterns (regex in JavaScript syntax; Python's `(?P<object>…)` is read too),
// `replace: true` drops the built-in patterns.
import { readFileSync } from "node:fs";

import type { Kind } from "./tools.js";

export const KINDS: readonly Kind[] = ["delete", "mcp_server", "cell", "worker"];

/** A field of the tool input, with what to use when it is missing or not text; or a fixed string. */
export type ValueSpec = string | { input: string; default?: string };

export interface ToolSpec {
  kind: Kind;
  target?: ValueSpec;
  operation?: ValueSpec;
}

export interface PatternSpec {
  name: string;
  regex: string;
  /** Whose text it reads (default ["Bash"]). */
  tools?: string[];
  ignore_case?: boolean;
}

/** A map document: the same shape as `hitl-hook --map FILE`'s. */
export interface ToolMap {
  tools?: Record<string, ToolSpec>;
  patterns?: PatternSpec[];
  replace?: boolean;
}

interface TableDocument {
  target_max: number;
  tools: Record<string, ToolSpec>;
  mcp: { prefix: string; separator: string; kind: Kind; target_prefix: string };
  texts: Record<string, string>;
  patterns: PatternSpec[];
}

export interface ToolCall {
  kind: Kind;
  target: string;
  operation: string;
}

interface Pattern {
  name: string;
  regex: RegExp;
  tools: string[];
}

const TABLE: TableDocument = JSON.parse(readFileSync(new URL("./tool_patterns.json", import.meta.url), "utf8"));

function compiled(spec: PatternSpec, where: string): Pattern {
  if (!spec || typeof spec.name !== "string" || !spec.name || typeof spec.regex !== "string" || !spec.regex) {
    throw new Error(`${where}: needs \`name\` and \`regex\``);
  }
  try {
    // `g`: every match, so a command destroying two things is judged whole; Python's group syntax read too.
    const source = spec.regex.replace(/\(\?P</g, "(?<");
    return { name: spec.name, regex: new RegExp(source, spec.ignore_case ? "gi" : "g"), tools: spec.tools ?? ["Bash"] };
  } catch (error) {
    throw new Error(`${where}.regex: ${(error as Error).message}`);
  }
}

const PATTERNS: Pattern[] = TABLE.patterns.map((spec, index) => compiled(spec, `patterns[${index}]`));

export class ClaudeToolTable {
  readonly tools: Record<string, ToolSpec>;
  readonly patterns: Pattern[];

  constructor(map?: ToolMap) {
    if (map !== undefined && (map === null || typeof map !== "object" || Array.isArray(map))) {
      throw new Error("the map must be an object with `tools` and/or `patterns`");
    }
    const unknown = Object.keys(map ?? {}).filter((key) => !["tools", "patterns", "replace"].includes(key));
    if (unknown.length) throw new Error(`the map has unknown keys: ${unknown.sort().join(", ")} (expected tools, patterns, replace)`);
    this.tools = { ...TABLE.tools };
    for (const [name, spec] of Object.entries(map?.tools ?? {})) {
      if (!spec || !KINDS.includes(spec.kind)) throw new Error(`tools.${name}: needs \`kind\`, one of ${KINDS.join(", ")}`);
      this.tools[name] = spec;
    }
    this.patterns = [...(map?.replace === true ? [] : PATTERNS), ...(map?.patterns ?? []).map((spec, index) => compiled(spec, `patterns[${index}]`))];
  }

  /** The gated call a tool call is, or null when nothing gates it. */
  callOf(toolName: string, toolInput: unknown): ToolCall | null {
    const input = isObject(toolInput) ? toolInput : {};
    const fixed = Object.hasOwn(this.tools, toolName) ? this.tools[toolName] : undefined;
    if (fixed) {
      return { kind: fixed.kind, target: clip(valueOf(fixed.target, toolName, input)), operation: clip(valueOf(fixed.operation, toolName, input)) };
    }
    const mcp = TABLE.mcp;
    if (toolName.startsWith(mcp.prefix)) {
      const rest = toolName.slice(mcp.prefix.length);
      const at = rest.indexOf(mcp.separator);
      const server = at < 0 ? "" : rest.slice(0, at);
      const tool = at < 0 ? "" : rest.slice(at + mcp.separator.length);
      return server && tool ? { kind: mcp.kind, target: clip(mcp.target_prefix + server), operation: clip(tool) } : null;
    }
    return this.destructive(toolName, input);
  }

  private destructive(toolName: string, input: Record<string, unknown>): ToolCall | null {
    const text = textOf(toolName, input);
    if (!text) return null;
    const found: { at: number; pattern: Pattern; match: RegExpMatchArray }[] = [];
    for (const pattern of this.patterns) {
      if (!pattern.tools.includes(toolName)) continue;
      for (const match of text.matchAll(pattern.regex)) found.push({ at: match.index ?? 0, pattern, match });
    }
    if (!found.length) return null;
    found.sort((a, b) => a.at - b.at); // stable: at one position, the table's order decides
    const { pattern, match } = found[0];
    const objects = found.length === 1 ? objectsOf(match) : [];
    // One object: a condition may judge it. Several, or several operations: only the whole text tells.
    let target = objects.length === 1 ? objects[0] : toolName === "Bash" ? text.trim() : "";
    if (!target) target = str(input.file_path) || text.trim();
    return { kind: "delete", target: clip(target), operation: pattern.name };
  }
}

/** The text a destructive pattern is looked for in (the table's `texts`): the command, or what is written. */
export function textOf(toolName: string, input: Record<string, unknown>): string {
  const where = Object.hasOwn(TABLE.texts, toolName) ? TABLE.texts[toolName] : "";
  if (!where) return "";
  const split = where.indexOf("[].");
  if (split < 0) return str(input[where]);
  const items = input[where.slice(0, split)];
  const field = where.slice(split + 3);
  return Array.isArray(items) ? items.filter(isObject).map((item) => str(item[field])).join("\n") : "";
}

function valueOf(spec: ValueSpec | undefined, toolName: string, input: Record<string, unknown>): string {
  if (spec && typeof spec === "object") return str(input[spec.input]) || String(spec.default || toolName);
  return spec ? String(spec) : toolName;
}

function objectsOf(match: RegExpMatchArray): string[] {
  const object = match.groups?.object;
  if (object === undefined) return [];
  return object.split(/\s+/).filter(Boolean).map((word) => word.replace(/^["'`;]+|["'`;]+$/g, ""));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** At most target_max characters (code points, as Python counts them). */
function clip(value: string): string {
  const points = Array.from(value);
  return points.length > TABLE.target_max ? points.slice(0, TABLE.target_max).join("") : value;
}
