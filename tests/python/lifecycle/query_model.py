"""The query language (docs/query.md) written again in plain Python, from the
document, as the judge of gulpdb's answers: Hypothesis strategies that draw
expressions as trees, a renderer that spells them in any of the grammar's
ways (keyword case, quotes, escapes, quoted keys, parentheses), and an
evaluator of the trees over a video's id, frame count, chunk and meta.

Nothing here calls gulpdb. Meta JSON is read with Python's json module, with
numbers kept exact (decimal.Decimal, and the document's rule for exponents
of more than 17 digits), so that the judge does not inherit a rounding the
engine must not have.
"""

from __future__ import annotations

import decimal
import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hypothesis import strategies as st

# ---- values ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Num:
    """A JSON number: exact (``dec``, ±Infinity included), NaN, or kept as its
    text when its exponent has more than 17 digits (``text``)."""
    kind: str  # "dec", "nan" or "text"
    dec: Optional[decimal.Decimal] = None
    text: str = ""

    @staticmethod
    def of(text: str) -> "Num":
        exponent = re.split(r"[eE]", text)[1] if re.search(r"[eE]", text) else ""
        if len(exponent.lstrip("+-").lstrip("0")) > 17:
            return Num("text", text=text)
        return Num("dec", dec=decimal.Decimal(text))

    @staticmethod
    def constant(name: str) -> "Num":
        return Num("nan") if name == "NaN" else Num("dec", dec=decimal.Decimal(name))

    def same(self, other: "Num") -> bool:
        if self.kind != other.kind:
            return False
        if self.kind == "nan":
            return True
        if self.kind == "text":
            return self.text == other.text
        return self.dec == other.dec

    @property
    def ordered(self) -> bool:
        return self.kind == "dec"


def parse_json(text: str) -> Any:
    """JSON in Python's dialect, numbers as Num, a repeated key's last value kept."""
    return json.loads(text, parse_int=Num.of, parse_float=Num.of, parse_constant=Num.constant)


def type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, Num):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    return "object"


def equal(a: Any, b: Any) -> bool:
    t = type_of(a)
    if t != type_of(b):
        return False
    if t == "number":
        return a.same(b)
    if t == "list":
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if t == "object":
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    return a == b


# ---- expressions ----------------------------------------------------------------------

@dataclass(frozen=True)
class Literal:
    value: Any  # as parse_json gives it
    text: str  # how the query spells it (a string: its rendering)


@dataclass(frozen=True)
class Field:
    builtin: str  # "id", "frames", "chunk", or "" for a meta key
    key: str = ""
    style: int = 0  # how a meta key is written (bare, meta.KEY, meta["KEY"], `KEY`)


@dataclass(frozen=True)
class Term:
    field: Field
    op: str  # = != < <= > >= in has
    values: Tuple[Literal, ...] = ()


@dataclass(frozen=True)
class Node:
    kind: str  # and, or, not
    children: Tuple[Any, ...]
    upper: bool = False  # keyword case
    parens: bool = False  # extra parentheses


RESERVED = {"and", "or", "not", "in", "has", "true", "false", "null"}
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _string_literal(s: str, quote: str, escape_all: bool) -> str:
    out = []
    for ch in s:
        cp = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + quote)
        elif cp < 0x20 or 0xD800 <= cp <= 0xDFFF or (escape_all and cp > 0x7E):
            if cp > 0xFFFF:
                cp -= 0x10000
                out.append("\\u%04x\\u%04x" % (0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)))
            else:
                out.append("\\u%04x" % cp)
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def _field_text(f: Field) -> str:
    if f.builtin:
        return f.builtin
    name_ok = bool(NAME.match(f.key)) and f.key.lower() not in RESERVED
    styles = []
    if name_ok and f.key not in ("id", "frames", "chunk", "meta"):
        styles.append(f.key)
    if name_ok:
        styles.append("meta." + f.key)
    styles.append("meta[" + json.dumps(f.key) + "]")
    styles.append("meta['" + f.key.replace("\\", "\\\\").replace("'", "\\'") + "']")
    if f.key:
        styles.append("`" + f.key.replace("`", "``") + "`")
    return styles[f.style % len(styles)]


def render(e: Any) -> str:
    """The text of expression `e` (parenthesised so that it means the tree)."""
    if isinstance(e, Term):
        field = _field_text(e.field)
        if e.op == "has":
            return "has " + field
        if e.op == "in":
            return field + " in (" + ", ".join(v.text for v in e.values) + ")"
        return f"{field} {e.op} {e.values[0].text}"
    word = e.kind.upper() if e.upper else e.kind
    if e.kind == "not":
        inner = render(e.children[0])
        text = f"{word} ({inner})" if isinstance(e.children[0], Node) else f"{word} {inner}"
    else:
        text = f" {word} ".join(
            f"({render(c)})" if isinstance(c, Node) and c.kind != "not" else render(c)
            for c in e.children)
    return f"({text})" if e.parens else text


def evaluate(e: Any, video_id: str, frames: int, chunk: int, meta: Any) -> bool:
    """Whether the video satisfies `e` (docs/query.md, "What a comparison means")."""
    if isinstance(e, Node):
        if e.kind == "not":
            return not evaluate(e.children[0], video_id, frames, chunk, meta)
        results = (evaluate(c, video_id, frames, chunk, meta) for c in e.children)
        return all(results) if e.kind == "and" else any(results)
    f = e.field
    if f.builtin == "id":
        value: Any = video_id
    elif f.builtin == "frames":
        value = Num.of(str(frames))
    elif f.builtin == "chunk":
        value = Num.of(str(chunk))
    elif isinstance(meta, dict) and f.key in meta:
        value = meta[f.key]
    else:
        return False  # a missing key: every term is false
    if e.op == "has":
        return True
    if e.op in ("=", "in"):
        return any(equal(value, v.value) or (not isinstance(v.value, str) and value == v.text)
                   for v in e.values)
    lit = e.values[0].value
    if type_of(value) != type_of(lit):
        return False
    if e.op == "!=":
        return not equal(value, lit)
    if isinstance(value, Num):
        if not (value.ordered and lit.ordered):
            return False
        a, b = value.dec, lit.dec
    else:
        a, b = value, lit
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[e.op]


def first_meta(meta_data: Sequence[str]) -> Any:
    """The meta of a video whose meta_data entries are these JSON texts."""
    return parse_json(meta_data[0]) if meta_data else None


# ---- strategies -------------------------------------------------------------------------

# JSON texts of values, with the kinds a query may compare them by.
NUMBERS = ["0", "1", "1.0", "-1", "2.5", "1e3", "-0.5", "0.1", "0.10000000000000001", "3",
           "123456789012345678901234567890", "-Infinity", "Infinity", "1e400"]
UNORDERED_NUMBERS = ["NaN", "1e100000000000000000000"]
STRINGS = ["", "a", "b", "ab", "1", "3", "1.0", "true", "é", "\ud800", "a\x00", "x y", "ü",
           "cat", "dog", "red fox", "q" * 450, "q" * 449 + "r"]
OTHERS = ["true", "false", "null", "[1, 2]", "[]", '{"a": 1}']


@st.composite
def literals(draw: Any, kind: str, strings: Sequence[str] = STRINGS) -> Literal:
    """A value of `kind`: "ordered" (numbers with an order, strings), "string",
    "number", "number_ordered", or "any"."""
    choices: List[str] = []
    if kind in ("ordered", "number", "number_ordered", "any"):
        choices += ["n:" + n for n in NUMBERS]
    if kind in ("number", "any"):
        choices += ["n:" + n for n in UNORDERED_NUMBERS]
    if kind in ("ordered", "string", "any"):
        choices += ["s:" + s for s in strings]
    if kind == "any":
        choices += ["o:" + o for o in OTHERS]
    choice = draw(st.sampled_from(choices))
    tag, text = choice[:2], choice[2:]
    if tag == "s:":
        quote = draw(st.sampled_from(["'", '"']))
        return Literal(text, _string_literal(text, quote, draw(st.booleans())))
    return Literal(parse_json(text), text)


@st.composite
def terms(draw: Any, keys: Sequence[str], strings: Sequence[str] = STRINGS) -> Term:
    which = draw(st.sampled_from(["meta"] * 4 + ["id", "frames", "chunk"]))
    if which == "meta":
        field = Field("", draw(st.sampled_from(list(keys))), draw(st.integers(0, 4)))
    else:
        field = Field(which)
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "in", "has"]))
    if op == "has":
        return Term(field, op)
    ranged = op in ("<", "<=", ">", ">=")
    if field.builtin in ("frames", "chunk"):
        kind = "number_ordered" if ranged else "number"
    elif field.builtin == "id":
        kind = "string" if ranged or op == "!=" else "any"
    else:
        kind = "ordered" if ranged else "any"
    lit = literals(kind, strings)
    if op == "in":
        return Term(field, op, tuple(draw(st.lists(lit, max_size=3))))
    value = draw(lit)
    if op == "!=" and value.value is None:
        value = Literal(Num.of("1"), "1")  # `!= null` is refused: never drawn
    return Term(field, op, (value,))


def expressions(keys: Sequence[str], strings: Sequence[str] = STRINGS) -> st.SearchStrategy:
    """Expressions over meta `keys` (and the built-in fields)."""
    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        combined = st.builds(lambda kind, cs, upper, parens: Node(kind, tuple(cs), upper, parens),
                             st.sampled_from(["and", "or"]),
                             st.lists(children, min_size=2, max_size=3), st.booleans(),
                             st.booleans())
        negated = st.builds(lambda c, upper: Node("not", (c,), upper), children, st.booleans())
        return combined | negated
    return st.recursive(terms(keys, strings), extend, max_leaves=6)
