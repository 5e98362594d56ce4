"""A safe parser for dim expressions, relations and constraint files.

Everything here is a hand-written tokenizer and a precedence-climbing
recursive-descent parser.  Nothing is ever evaluated as Python: no ``eval``,
``exec``, ``sympify`` or ``parse_expr``.  Input is untrusted (``--assume``
strings, ``dim_param`` strings, constraint files) and is bounded: at most
:data:`MAX_CHARS` characters, :data:`MAX_TOKENS` tokens and :data:`MAX_DEPTH`
levels of parentheses/calls per expression.

Expression language (what :func:`smtshape.printing.show` prints)::

    expr    := integer literal (at most 30 digits) | name | "quoted name"
             | expr + expr | expr - expr | expr * expr
             | expr // expr          floor division      (expr.floordiv)
             | expr % expr           modulo, Python sign (expr.mod)
             | -expr | +expr | ( expr )
             | expr ** N             N an integer literal, 0 <= N <= 64
             | min(e, ...) | max(e, ...)
             | floordiv(a, b) | ceildiv(a, b) | mod(a, b) | bcast(a, b)
             | if(relation, a, b)

Precedence, loosest first: ``or``, ``and``, ``not``, comparisons (chainable:
``1 <= x <= 64``), ``+ -``, ``* // %``, unary ``- +``, ``**`` -- as in
Python, so ``-a // 2`` is ``floordiv(-a, 2)`` and ``-a ** 2`` is ``-(a**2)``.
A single ``/`` is rejected (say ``//`` or ``ceildiv``).

Relations: ``== != <= < >= >`` (``=`` is accepted as ``==``), ``and``,
``or``, ``not`` and parentheses; they build :mod:`smtshape.constraints`
``Rel``/``And``/``Or``/``Not``.

Constraint files hold one relation per line; ``#`` starts a comment.
"""
from __future__ import annotations

import os
from typing import Callable, NamedTuple

from . import expr as E
from .constraints import And, Not, Or, Rel, Relation
from .errors import BadInput
from .lazy import sympy
from .printing import KEYWORDS

__all__ = [
    "ParseError",
    "parse_expr",
    "parse_relation",
    "parse_constraints",
    "load_constraints",
    "MAX_CHARS",
    "MAX_TOKENS",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_EXPONENT",
    "MAX_FILE_CHARS",
]

MAX_CHARS = 100_000          # characters in one expression / relation
MAX_TOKENS = 10_000          # tokens in one expression / relation
MAX_DEPTH = 200              # nested parentheses and calls
MAX_DIGITS = 30              # digits in an integer literal
MAX_EXPONENT = 64            # largest exponent of '**' (and degree it may create)
MAX_INT_BITS = 16_384        # integer constants computed while parsing
MAX_FILE_CHARS = 1_000_000   # a whole constraint file

FUNCTIONS = ("min", "max", "floordiv", "ceildiv", "mod", "bcast", "if")


# ------------------------------------------------------------------ errors

class ParseError(BadInput, ValueError):
    """Malformed expression, relation or constraint file.

    Attributes: ``problem`` (the bare message), ``source`` (file name or
    None), ``line`` (1-based line in the file, or in a multi-line string),
    ``column`` (1-based) and ``position`` (0-based offset in the parsed text).
    """

    def __init__(self, problem: str, *, text: str | None = None,
                 pos: int | None = None, source: str | None = None,
                 line: int | None = None):
        self.problem = problem
        self.source = source
        self.position = pos
        self.line = line
        self.column = None
        snippet = ""
        multiline = False
        if text is not None and pos is not None:
            pos = max(0, min(pos, len(text)))
            start = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            rel_line = text.count("\n", 0, pos) + 1
            multiline = "\n" in text
            self.column = pos - start + 1
            self.line = rel_line if line is None else line + rel_line - 1
            snippet = _snippet(text[start:end], pos - start)
        if source is not None:
            where = source
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            msg = f"{where}: {problem}"
        elif self.column is not None:
            at = (f"line {self.line}, column {self.column}" if multiline
                  else f"column {self.column}")
            msg = f"{problem} (at {at})"
        else:
            msg = problem
        super().__init__(msg + snippet)


def _snippet(line: str, col: int, width: int = 72) -> str:
    """The line (windowed around ``col``) and a caret under ``col``."""
    line = line.replace("\t", " ").replace("\r", " ")
    lo = max(0, col - width // 2)
    hi = min(len(line), lo + width)
    lo = max(0, min(lo, hi - width))
    shown = line[lo:hi]
    caret = col - lo
    if lo > 0:
        shown, caret = "..." + shown, caret + 3
    if hi < len(line):
        shown += "..."
    if not shown.strip():
        return ""
    return "\n    " + shown + "\n    " + " " * caret + "^"


# ------------------------------------------------------------------ tokens

class Token(NamedTuple):
    kind: str        # "int" | "name" | "qname" | "kw" | "op" | "eof"
    value: object    # int for "int", str otherwise
    pos: int         # 0-based offset in the text


_TWO_CHAR = ("//", "**", "==", "!=", "<=", ">=")
_ONE_CHAR = "+-*%(),<>="
_HINTS = {
    "/": "'/' is not an operator: use '//' for floor division "
         "(or ceildiv(a, b) to round up)",
    "!": "'!' alone is not an operator: use '!=' or 'not'",
    "&": "'&' is not an operator: use 'and'",
    "|": "'|' is not an operator: use 'or'",
    "^": "'^' is not an operator: use '**' for powers",
    "'": "single quotes are not allowed: quote a name with double quotes",
    ".": "'.' is not allowed: only integers and names (quote unusual names "
         "with double quotes)",
    "[": "'[' is not allowed here",
    "]": "']' is not allowed here",
}

_CMP = ("==", "!=", "<=", "<", ">=", ">", "=")

# precedence levels, loosest first
_OR, _AND, _NOT, _CMP_L, _ADD, _MUL, _UNARY = 1, 2, 3, 4, 5, 6, 7
_LEVEL = {"or": _OR, "and": _AND, "+": _ADD, "-": _ADD,
          "*": _MUL, "//": _MUL, "%": _MUL}
for _op in _CMP:
    _LEVEL[_op] = _CMP_L

class _Val(NamedTuple):
    is_rel: bool     # a relation (True) or an integer expression (False)
    value: object
    pos: int


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of input"
    if tok.kind == "int":
        return f"number {tok.value}"
    if tok.kind == "qname":
        return f'name "{tok.value}"'
    if tok.kind == "name":
        return f"name '{tok.value}'"
    return f"'{tok.value}'"


# ------------------------------------------------------------------ parser

class _Parser:
    def __init__(self, text: str, symbol: Callable, source=None, line=None):
        self.text = text
        self.symbol = symbol
        self.source = source
        self.line = line
        self.depth = 0
        self.i = 0
        self.toks: list[Token] = []

    # -- errors
    def err(self, problem: str, pos: int):
        raise ParseError(problem, text=self.text, pos=pos,
                         source=self.source, line=self.line)

    # -- tokenizer
    def tokenize(self) -> None:
        text, n, i = self.text, len(self.text), 0
        toks = self.toks
        while i < n:
            ch = text[i]
            if ch in " \t\r\n\f\v":
                i += 1
                continue
            if len(toks) >= MAX_TOKENS:
                self.err(f"expression has more than {MAX_TOKENS} tokens", i)
            if "0" <= ch <= "9":
                j = i
                while j < n and "0" <= text[j] <= "9":
                    j += 1
                if j - i > MAX_DIGITS:
                    self.err(f"integer literal is too long ({j - i} digits; "
                             f"at most {MAX_DIGITS} are allowed)", i)
                if j < n and text[j] == ".":
                    self.err("only integers are allowed (no decimal point)", j)
                if j < n and text[j].isascii() and (text[j].isalpha() or text[j] == "_"):
                    self.err(f"a number cannot be directly followed by a name: "
                             f"write '{text[i:j]} * {text[j]}...' to multiply", j)
                toks.append(Token("int", int(text[i:j]), i))
                i = j
            elif ch.isascii() and (ch.isalpha() or ch == "_"):
                j = i + 1
                while j < n and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                word = text[i:j]
                toks.append(Token("kw" if word in KEYWORDS else "name", word, i))
                i = j
            elif ch == '"':
                j = i + 1
                chars = []
                while True:
                    if j >= n or text[j] in "\n\r":
                        self.err("unterminated quoted name (missing closing '\"')", i)
                    c = text[j]
                    if c == "\\":
                        if j + 1 < n and text[j + 1] in '"\\':
                            chars.append(text[j + 1])
                            j += 2
                            continue
                        self.err("in a quoted name, '\\' may only escape '\"' or '\\'", j)
                    if c == '"':
                        break
                    chars.append(c)
                    j += 1
                name = "".join(chars)
                if not name:
                    self.err("empty quoted name", i)
                toks.append(Token("qname", name, i))
                i = j + 1
            else:
                two = text[i:i + 2]
                if two in _TWO_CHAR:
                    toks.append(Token("op", two, i))
                    i += 2
                elif ch in _ONE_CHAR:
                    toks.append(Token("op", ch, i))
                    i += 1
                elif ch in _HINTS:
                    self.err(_HINTS[ch], i)
                else:
                    shown = repr(ch) if ch.isprintable() else f"U+{ord(ch):04X}"
                    if ch.isprintable() and not ch.isascii():
                        shown += f" (U+{ord(ch):04X}); quote unusual names with double quotes"
                    self.err(f"unexpected character {shown}", i)
        toks.append(Token("eof", "", n))

    # -- token helpers
    def peek(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def is_op(self, value: str) -> bool:
        tok = self.toks[self.i]
        return tok.kind == "op" and tok.value == value

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.err(f"expression is nested too deeply (more than {MAX_DEPTH} "
                     "levels of parentheses or calls)", pos)

    # -- type checks
    def num(self, v: _Val, what: str = "an integer expression"):
        if v.is_rel:
            self.err(f"expected {what}, found a relation", v.pos)
        return v.value

    def rel(self, v: _Val):
        if not v.is_rel:
            self.err("expected a relation (==, !=, <=, <, >=, >), "
                     "found an integer expression", v.pos)
        return v.value

    def build(self, fn, pos, *args):
        """Call an expression builder; turn its failures into ParseError."""
        try:
            out = fn(*args)
        except ParseError:
            raise
        except RecursionError:
            raise
        except (ArithmeticError, TypeError, ValueError) as exc:
            self.err(f"cannot build this expression: {exc}", pos)
        return self.check_size(out, pos)

    def check_size(self, e, pos):
        if isinstance(e, int) and e.bit_length() > MAX_INT_BITS:
            self.err(f"integer constant is too large (more than {MAX_INT_BITS} bits)", pos)
        return e

    def check_divisor(self, b, pos, op: str):
        if isinstance(b, int) and b <= 0:
            if b == 0:
                self.err(f"division by zero in '{op}'", pos)
            self.err(f"the divisor of '{op}' must be positive (got {b})", pos)

    # -- grammar
    def expression(self, min_level: int) -> _Val:
        tok = self.peek()
        if tok.kind == "kw" and tok.value == "not":
            if min_level > _NOT:
                self.err("'not' cannot appear here: put the relation in parentheses", tok.pos)
            odd = False
            while self.peek().kind == "kw" and self.peek().value == "not":
                self.next()
                odd = not odd
            arg = self.rel(self.expression(_CMP_L))
            left = _Val(True, Not(arg) if odd else arg, tok.pos)
        else:
            left = self.operand()
        while True:
            tok = self.peek()
            if tok.kind not in ("op", "kw") or tok.value not in _LEVEL:
                break
            level = _LEVEL[tok.value]
            if level < min_level:
                break
            if level == _CMP_L:
                left = self.chain(left)
                continue
            self.next()
            right = self.expression(level + 1)
            if tok.value in ("and", "or"):
                a, b = self.rel(left), self.rel(right)
                cls = And if tok.value == "and" else Or
                args = (a.args if isinstance(a, cls) else (a,)) + \
                       (b.args if isinstance(b, cls) else (b,))
                left = _Val(True, cls(args), left.pos)
                continue
            a = self.num(left, f"an integer expression before '{tok.value}'")
            b = self.num(right, f"an integer expression after '{tok.value}'")
            op = tok.value
            if op == "+":
                v = self.build(E.add, tok.pos, a, b)
            elif op == "-":
                v = self.build(E.sub, tok.pos, a, b)
            elif op == "*":
                v = self.build(E.mul, tok.pos, a, b)
            elif op == "//":
                self.check_divisor(b, right.pos, "//")
                v = self.build(E.floordiv, tok.pos, a, b)
            else:
                self.check_divisor(b, right.pos, "%")
                v = self.build(E.mod, tok.pos, a, b)
            left = _Val(False, v, left.pos)
        return left

    def chain(self, first: _Val) -> _Val:
        """``a OP b OP c ...`` -> Rel or And of the pairs (Python chaining)."""
        operands = [first]
        ops = []
        while True:
            tok = self.peek()
            if tok.kind != "op" or tok.value not in _CMP:
                break
            self.next()
            ops.append(("==" if tok.value == "=" else tok.value, tok.pos))
            operands.append(self.expression(_ADD))
        rels = []
        for k, (op, pos) in enumerate(ops):
            a = self.num(operands[k], f"an integer expression before '{op}'")
            b = self.num(operands[k + 1], f"an integer expression after '{op}'")
            rels.append(Rel(op, a, b))
        return _Val(True, rels[0] if len(rels) == 1 else And(tuple(rels)), first.pos)

    def operand(self) -> _Val:
        """Unary signs, an atom and an optional ``** N``."""
        start = self.peek().pos
        negate = signed = False
        while self.is_op("-") or self.is_op("+"):
            if self.next().value == "-":
                negate = not negate
            signed = True
        tok = self.next()
        if tok.kind == "int":
            val = _Val(False, tok.value, tok.pos)
        elif tok.kind == "qname":
            val = _Val(False, self.name(tok), tok.pos)
        elif tok.kind == "name" and self.is_op("("):
            val = self.call(tok)
        elif tok.kind == "name":
            val = _Val(False, self.name(tok), tok.pos)
        elif tok.kind == "op" and tok.value == "(":
            self.enter(tok.pos)
            inner = self.expression(_OR)
            if not self.is_op(")"):
                nxt = self.peek()
                self.err(f"expected ')' to close the '(' at column "
                         f"{self._col(tok.pos)}, found {_describe(nxt)}", nxt.pos)
            self.next()
            self.depth -= 1
            val = _Val(inner.is_rel, inner.value, tok.pos)
        elif tok.kind == "eof":
            self.err("unexpected end of input: expected a number, a name or '('", tok.pos)
        elif tok.kind == "kw":
            self.err(f"unexpected '{tok.value}': expected a number, a name or '('", tok.pos)
        else:
            self.err(f"unexpected {_describe(tok)}: expected a number, a name or '('", tok.pos)
        if self.is_op("**"):
            val = self.power(val)
        if signed:
            v = self.num(val, "an integer expression after a sign")
            if negate:
                v = self.build(E.neg, start, v)
            val = _Val(False, v, start)
        return val

    def power(self, base: _Val) -> _Val:
        op = self.next()
        b = self.num(base, "an integer expression before '**'")
        tok = self.peek()
        if tok.kind == "op" and tok.value == "-":
            self.err("negative exponents are not allowed", tok.pos)
        if tok.kind != "int":
            self.err(f"the exponent of '**' must be an integer literal "
                     f"(0..{MAX_EXPONENT}), found {_describe(tok)}", tok.pos)
        self.next()
        n = tok.value
        if n > MAX_EXPONENT:
            self.err(f"exponent {n} is too large (at most {MAX_EXPONENT})", tok.pos)
        if self.is_op("**"):
            self.err("chained '**' is not supported: use parentheses", self.peek().pos)
        if isinstance(b, int):
            v = self.check_size(b ** n, op.pos)
        else:
            v = self.build(lambda x: E.norm(x ** n), op.pos, b)
            if not isinstance(v, int):
                for p in v.atoms(sympy.Pow):
                    if p.exp.is_Integer and abs(int(p.exp)) > MAX_EXPONENT:
                        self.err(f"power is too large (exponent {int(p.exp)} "
                                 f"exceeds {MAX_EXPONENT})", op.pos)
        return _Val(False, v, base.pos)

    def call(self, name_tok: Token) -> _Val:
        fname = name_tok.value
        if fname not in FUNCTIONS:
            self.err(f"unknown function '{fname}' (known functions: "
                     f"{', '.join(FUNCTIONS)})", name_tok.pos)
        open_tok = self.next()  # '('
        self.enter(open_tok.pos)
        args: list[_Val] = []
        if self.is_op(")"):
            self.next()
        else:
            while True:
                args.append(self.expression(_OR))
                if self.is_op(","):
                    self.next()
                    continue
                if self.is_op(")"):
                    self.next()
                    break
                nxt = self.peek()
                self.err(f"expected ',' or ')' in the call to {fname}(), "
                         f"found {_describe(nxt)}", nxt.pos)
        self.depth -= 1
        pos = name_tok.pos
        want = {"floordiv": 2, "ceildiv": 2, "mod": 2, "bcast": 2, "if": 3}.get(fname)
        if want is not None and len(args) != want:
            self.err(f"{fname}() takes {want} arguments, got {len(args)}", pos)
        if fname in ("min", "max"):
            if not args:
                self.err(f"{fname}() needs at least one argument", pos)
            vals = [self.num(a, f"an integer expression in {fname}()") for a in args]
            f = E.smin if fname == "min" else E.smax
            out = vals[0]
            for v in vals[1:]:
                out = self.build(f, pos, out, v)
            return _Val(False, out, pos)
        if fname == "if":
            cond = self.rel(args[0])
            a = self.num(args[1], "an integer expression as the 2nd argument of if()")
            b = self.num(args[2], "an integer expression as the 3rd argument of if()")
            return _Val(False, self.build(_piecewise, pos, cond, a, b), pos)
        a = self.num(args[0], f"an integer expression in {fname}()")
        b = self.num(args[1], f"an integer expression in {fname}()")
        if fname == "bcast":
            if isinstance(a, int) and isinstance(b, int) and a != b and 1 not in (a, b):
                self.err(f"bcast({a}, {b}): sizes {a} and {b} do not broadcast", pos)
            return _Val(False, self.build(E.bcast, pos, a, b), pos)
        self.check_divisor(b, args[1].pos, f"{fname}()")
        f = {"floordiv": E.floordiv, "ceildiv": E.ceildiv, "mod": E.mod}[fname]
        return _Val(False, self.build(f, pos, a, b), pos)

    def name(self, tok: Token):
        try:
            s = self.symbol(tok.value)
        except ParseError:
            raise
        except KeyError:
            self.err(f"unknown name '{tok.value}'", tok.pos)
        except (BadInput, ValueError, TypeError) as exc:
            self.err(f"name '{tok.value}': {exc}", tok.pos)
        return E.norm(s)

    def _col(self, pos: int) -> int:
        return pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    # -- entry
    def parse(self) -> _Val:
        self.tokenize()
        if self.peek().kind == "eof":
            self.err("empty expression", 0)
        try:
            val = self.expression(_OR)
        except RecursionError:
            raise ParseError("expression is nested too deeply", source=self.source,
                             line=self.line) from None
        tok = self.peek()
        if tok.kind != "eof":
            if tok.kind == "op" and tok.value == ")":
                self.err("unbalanced ')': there is no matching '('", tok.pos)
            self.err(f"unexpected {_describe(tok)} after a complete expression "
                     "(missing operator?)", tok.pos)
        return val


def _sympy_cond(r):
    if isinstance(r, Rel):
        cls = next(c for c, op in E.relation_classes() if op == r.op)
        return cls(E.to_sympy(r.lhs), E.to_sympy(r.rhs))
    if isinstance(r, And):
        return sympy.And(*(_sympy_cond(a) for a in r.args))
    if isinstance(r, Or):
        return sympy.Or(*(_sympy_cond(a) for a in r.args))
    if isinstance(r, Not):
        return sympy.Not(_sympy_cond(r.arg))
    raise TypeError(f"not a relation: {r!r}")


def _piecewise(cond, a, b):
    return E.norm(sympy.Piecewise((E.to_sympy(a), _sympy_cond(cond)),
                                  (E.to_sympy(b), True)))


def _run(text, symbol, source=None, line=None, limit=MAX_CHARS) -> _Val:
    if not isinstance(text, str):
        raise ParseError(f"expected text to parse, got {type(text).__name__}",
                         source=source, line=line)
    if len(text) > limit:
        raise ParseError(f"text is too long ({len(text)} characters; at most "
                         f"{limit} are allowed)", source=source, line=line)
    if symbol is None:
        symbol = E.symbol
    try:
        return _Parser(text, symbol, source, line).parse()
    except RecursionError:
        raise ParseError("expression is nested too deeply",
                         source=source, line=line) from None


# ------------------------------------------------------------------ public API

def parse_expr(text: str, symbol: Callable = E.symbol) -> E.Expr:
    """Parse an integer dim expression; returns an int or a sympy expression.

    Names become ``symbol(name)`` (default :func:`smtshape.expr.symbol`).
    Raises :class:`ParseError` on any malformed input.
    """
    p_val = _run(text, symbol)
    if p_val.is_rel:
        raise ParseError("expected an integer expression, found a relation "
                         "(use parse_relation for comparisons)",
                         text=text, pos=p_val.pos)
    return E.norm(p_val.value)


def parse_relation(text: str, symbol: Callable = E.symbol) -> Relation:
    """Parse a relation (``a + b == 1024``, ``1 <= seq <= 4096``, ``x == 1 or y == 1``)."""
    return _relation(text, symbol)


def _relation(text, symbol, source=None, line=None):
    val = _run(text, symbol, source, line)
    if not val.is_rel:
        raise ParseError("expected a relation (==, !=, <=, <, >=, >), found only an "
                         "integer expression", text=text, pos=val.pos,
                         source=source, line=line)
    return val.value


def _strip_comment(line: str) -> str:
    """``line`` up to a ``#`` that is not inside a quoted name."""
    quoted = False
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if quoted and c == "\\":
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "#" and not quoted:
            return line[:i]
        i += 1
    return line


def parse_constraints(text: str, source: str = "<string>",
                      symbol: Callable = E.symbol) -> list[tuple[int, str, Relation]]:
    """Parse a constraint file's text: one relation per line, ``#`` comments.

    Returns ``[(line number, stripped relation text, relation), ...]``.
    Errors name ``source:line:column``.
    """
    if not isinstance(text, str):
        raise ParseError(f"expected text to parse, got {type(text).__name__}", source=source)
    if len(text) > MAX_FILE_CHARS:
        raise ParseError(f"constraint text is too long ({len(text)} characters; at "
                         f"most {MAX_FILE_CHARS} are allowed)", source=source)
    out = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        body = _strip_comment(raw.rstrip("\r"))
        stripped = body.strip()
        if not stripped:
            continue
        out.append((lineno, stripped, _relation(body, symbol, source, lineno)))
    return out


def load_constraints(path, symbol: Callable = E.symbol) -> list[tuple[int, str, Relation]]:
    """Read and parse a constraint file (UTF-8). See :func:`parse_constraints`."""
    try:
        name = os.fspath(path)
    except TypeError:
        raise ParseError(f"expected a file path, got {type(path).__name__}") from None
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    try:
        with open(name, "rb") as f:
            data = f.read(4 * MAX_FILE_CHARS + 4)
    except FileNotFoundError:
        raise ParseError(f"constraint file '{name}' does not exist") from None
    except IsADirectoryError:
        raise ParseError(f"constraint file '{name}' is a directory, not a file") from None
    except PermissionError:
        raise ParseError(f"cannot read constraint file '{name}': permission denied") from None
    except OSError as exc:
        raise ParseError(f"cannot read constraint file '{name}': "
                         f"{exc.strerror or exc}") from None
    if len(data) > 4 * MAX_FILE_CHARS:
        raise ParseError(f"constraint file '{name}' is too large "
                         f"(more than {MAX_FILE_CHARS} characters)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError(f"constraint file is not UTF-8 text (invalid byte "
                         f"0x{data[exc.start]:02x} at byte offset {exc.start})",
                         source=name, line=line) from None
    return parse_constraints(text, source=name, symbol=symbol)
