"""CEL's syntax read into a small tree, so a condition's cost is bounded on what it means, not on its text.

The grammar is the CEL language definition's (cel.dev, "Syntax"), read by recursive descent:

    Expr     = Or ["?" Or ":" Expr]            Or  = And {"||" And}      And = Rel {"&&" Rel}
    Rel      = Add {("<"|"<="|">="|">"|"=="|"!="|"in") Add}               Add = Mul {("+"|"-") Mul}
    Mul      = Unary {("*"|"/"|"%") Unary}      Unary = {"!" | "-"} Member
    Member   = Primary {"." IDENT ["(" [Exprs] ")"] | "[" Expr "]"}
    Primary  = ["."] IDENT ["(" [Exprs] ")"] | "(" Expr ")" | "[" [Exprs] [","] "]"
             | "{" [Expr ":" Expr {"," Expr ":" Expr}] [","] "}" | ["."] IDENT {"." IDENT} "{" fields "}"
             | literal

Strings are read as the lexer reads them: a raw string (`r"…"`) ends at its first closing quote,
backslashes and all; triple quotes span lines; `//` starts a comment. A chain of one operator
(`a && b && c`, `x + y + z`) is one node with many operands, so a long flat condition is shallow.
Whatever this reader does not take is refused before the library sees it; the library compiles
what it takes, so a condition must satisfy both.
"""

import re
from dataclasses import dataclass, field

MAX_DEPTH = 24
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})


class SyntaxRefused(ValueError):
    """The text is not CEL this reader takes, or nests deeper than MAX_DEPTH; position is 1-based."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


@dataclass
class Node:
    """One node: kind is lit, ident, select, index, call, list, map, struct, op, cond or comprehension."""

    kind: str
    position: int  # 1-based, in the text as written
    children: list["Node"] = field(default_factory=list)
    name: str = ""  # ident and select: the name; call: the function; op: the operator; comprehension: the macro
    size: int = 1  # lit: the characters it holds (a string's length), else 1
    var: str = ""  # comprehension: the name it binds
    height: int = 1  # the levels of the tree from here down
    grouped: bool = False  # in parentheses: `(a + b) + c` is two additions, not one of three

    def __post_init__(self) -> None:
        for child in self.children:
            self.grew(child)

    def grew(self, child: "Node") -> None:
        self.height = max(self.height, child.height + 1)
        if self.height > MAX_DEPTH:
            raise _too_deep(self.position)


def _too_deep(position: int) -> SyntaxRefused:
    return SyntaxRefused(f"condition nests deeper than {MAX_DEPTH} at position {position}: write it flatter", position)


def _refused(position: int, why: str) -> SyntaxRefused:
    return SyntaxRefused(f"condition does not compile at position {position}: {why}", position)


_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>(?:[bB][rR]?|[rR][bB]?)?(?:\"\"\"|'''|"|'))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\|\||&&|==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE,
)
_ESCAPE = re.compile(r"\\(?:[abfnrtv\\?\"'`]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-3][0-7]{2})")
_RELATIONS = ("<", "<=", ">=", ">", "==", "!=", "in")


@dataclass
class _Token:
    kind: str  # string, number, ident, punct, end
    text: str
    position: int
    size: int = 1


def _string_end(source: str, start: int, prefix: str, quote: str) -> tuple[int, int]:
    """Where the string literal opened at `start` ends (exclusive), and how many characters it holds."""
    raw = "r" in prefix.lower()
    index = start + len(prefix) + len(quote)
    held = 0
    while True:
        if source.startswith(quote, index):
            return index + len(quote), held
        if index >= len(source) or (len(quote) == 1 and source[index] in "\r\n"):
            raise _refused(start + 1, "a string opened here never ends")
        if source[index] == "\\" and not raw:
            escape = _ESCAPE.match(source, index)
            if escape is None:
                raise _refused(index + 1, "an unknown escape")
            index = escape.end()
        else:
            index += 1
        held += 1


def tokens(source: str) -> list[_Token]:
    found, index = [], 0
    while index < len(source):
        match = _TOKEN.match(source, index)
        if match is None:
            raise _refused(index + 1, f"{source[index]!r} is not CEL")
        kind = match.lastgroup
        if kind == "string":
            opener = match.group(0)
            quote = opener.lstrip("bBrR")
            end, held = _string_end(source, index, opener[: len(opener) - len(quote)], quote)
            found.append(_Token("string", source[index:end], index + 1, size=max(1, held)))
            index = end
            continue
        if kind != "space":
            found.append(_Token(kind, match.group(0), index + 1))
        index = match.end()
    found.append(_Token("end", "", len(source) + 1))
    return found


class _Parser:
    def __init__(self, source: str) -> None:
        self.tokens = tokens(source)
        self.at = 0
        self.depth = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.at]

    def take(self, text: str | None = None) -> _Token:
        token = self.token
        if text is not None and token.text != text:
            shown = repr(token.text) if token.text else "the end"
            raise _refused(token.position, f"expected {text!r}, not {shown}")
        self.at += 1
        return token

    def peek(self, *texts: str) -> bool:
        return self.token.kind in ("punct", "ident") and self.token.text in texts

    def expr(self) -> Node:
        # Every way down (brackets, calls, `!`, `-`) passes here or through unary: the reader's own stack is bounded.
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _too_deep(self.token.position)
        try:
            test = self.chain(("||",), self.and_)
            if not self.peek("?"):
                return test
            self.take("?")
            then = self.chain(("||",), self.and_)
            self.take(":")
            return Node("cond", test.position, [test, then, self.expr()])
        finally:
            self.depth -= 1

    def chain(self, operators: tuple[str, ...], operand) -> Node:
        """A run of one precedence level, left to right; one operator repeated is one node with many operands."""
        node = operand()
        while self.peek(*operators):
            operator = self.take().text
            right = operand()
            if node.kind == "op" and node.name == operator and not node.grouped:
                node.children.append(right)
                node.grew(right)
            else:
                node = Node("op", node.position, [node, right], name=operator)
        return node

    def and_(self) -> Node:
        return self.chain(("&&",), self.relation)

    def relation(self) -> Node:
        return self.chain(_RELATIONS, self.addition)

    def addition(self) -> Node:
        return self.chain(("+", "-"), self.multiplication)

    def multiplication(self) -> Node:
        return self.chain(("*", "/", "%"), self.unary)

    def unary(self) -> Node:
        signs = []
        while self.peek("!", "-"):
            signs.append(self.take())
        node = self.member()
        for sign in reversed(signs):
            node = Node("op", sign.position, [node], name=sign.text + "u")
        return node

    def member(self) -> Node:
        node = self.primary()
        while self.peek(".", "["):
            token = self.take()
            if token.text == "[":
                node = Node("index", token.position, [node, self.expr()])
                self.take("]")
                continue
            name = self.identifier()
            if self.peek("("):
                self.take("(")
                node = self.call(name, token.position, [node, *self.arguments(")")], method=True)
            else:
                node = Node("select", token.position, [node], name=name)
        return node

    def call(self, name: str, position: int, arguments: list[Node], *, method: bool) -> Node:
        """A function or method call; `list.all(x, …)` and its kin are comprehensions binding x."""
        if method and name in MACROS and len(arguments) in (3, 4) and arguments[1].kind == "ident":
            return Node("comprehension", position, [arguments[0], *arguments[2:]], name=name, var=arguments[1].name)
        return Node("call", position, arguments, name=name)

    def identifier(self) -> str:
        token = self.token
        if token.kind != "ident":
            shown = repr(token.text) if token.text else "the end"
            raise _refused(token.position, f"expected a name, not {shown}")
        self.at += 1
        return token.text

    def arguments(self, closing: str) -> list[Node]:
        found = []
        while not self.peek(closing):
            found.append(self.expr())
            if not self.peek(","):
                break
            self.take(",")
        self.take(closing)
        return found

    def primary(self) -> Node:
        token = self.token
        if token.kind in ("string", "number"):
            self.at += 1
            return Node("lit", token.position, size=token.size)
        if self.peek("("):
            self.take("(")
            node = self.expr()
            self.take(")")
            node.grouped = True
            return node
        if self.peek("["):
            self.take("[")
            return Node("list", token.position, self.arguments("]"))
        if self.peek("{"):
            return self.entries(token.position, keyed=True)
        if self.peek("."):
            self.take(".")
        name = self.identifier()
        if name in ("true", "false", "null"):
            return Node("lit", token.position)
        if self.peek("("):
            self.take("(")
            return self.call(name, token.position, self.arguments(")"), method=False)
        ahead = self.at
        while self.tokens[ahead].text == "." and self.tokens[ahead + 1].kind == "ident":
            ahead += 2
        if self.tokens[ahead].text == "{":  # a message's qualified name, `a.b.C{…}`
            while self.at < ahead:
                self.take(".")
                name += "." + self.identifier()
        if self.peek("{"):
            return self.entries(token.position, keyed=False, name=name)
        return Node("ident", token.position, name=name)

    def entries(self, position: int, *, keyed: bool, name: str = "") -> Node:
        """A map literal `{k: v, …}` (keyed) or a message `Name{field: v, …}`."""
        self.take("{")
        children = []
        while not self.peek("}"):
            if keyed:
                children.append(self.expr())
            else:
                self.identifier()
            self.take(":")
            children.append(self.expr())
            if not self.peek(","):
                break
            self.take(",")
        self.take("}")
        return Node("map" if keyed else "struct", position, children, name=name)


def parse(source: str) -> Node:
    """The condition's tree, or SyntaxRefused naming the position."""
    parser = _Parser(source)
    node = parser.expr()
    if parser.token.kind != "end":
        raise _refused(parser.token.position, f"{parser.token.text!r} after a whole expression")
    return node
