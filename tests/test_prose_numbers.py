"""Every number written in a lesson notebook's markdown is accounted for.

The course promises (notebook 00) that every number in the text is printed by the code beside
it. This test reads every markdown cell of notebooks 00-09, extracts its number tokens, and
gives each checked number the first of these classes that fits:

0. **a name or a version**: a row of ``docs/prose_numbers.md`` of kind ``name`` or ``version``
   covers it ("Llama 2 7B", "torch 2.4"). It is no quantity, so it is never counted as printed
   (it is counted with the definitions).

1. **printed**: the value occurs as a number token in the stored outputs (stream text,
   ``text/plain``, ``text/markdown``, ``text/html`` with its tags removed) of a code cell of the
   same notebook. A prose number matches a printed one when the printed value, rounded to the
   prose's last written digit, gives the prose value, and the printed value is written at least
   as precisely: prose ``0.30`` matches printed ``0.30``, ``0.300`` or ``0.2996``, not ``0.3``
   or ``0.31``. A value exactly half a unit away matches too, since the printed number may
   itself be a rounding (prose ``0.12`` against printed ``0.125``). Thousands separators are
   stripped (``50,257``, ``50{,}257``), the Unicode minus is a minus, and ``±`` is no sign. A
   prose number without a sign matches a printed value of either sign (prose "falls by 0.3"
   against a printed ``-0.3``); a prose number with a minus matches only a negative one.
   Scales are part of the value and of its precision: ``0.84 million`` is 840,000 to the nearest
   10,000 and matches a printed ``842,752``; ``7B`` is 7·10⁹ to the nearest 10⁹; ``3·10⁻²`` and
   ``3e-2`` are 0.03 to the nearest 0.01; a power is exact (``2³⁰`` is 1,073,741,824). A
   percentage is a fraction, and so are percentage points: prose ``12%`` (or "12 points") is
   0.12 to the nearest 0.01 and matches a printed ``12%``, ``12.3%``, ``0.12`` or ``0.1234``,
   not a bare printed ``12``. An integer's trailing zeros count as written, except after
   "about", "roughly", "around", "≈" or "~" in a number of four or more digits ("≈ 22,000" is
   22,000 to the nearest thousand and matches a printed ``22,026``).

   **Machine-varying outputs.** A cell tagged ``nbval-ignore-output`` may print what differs
   from machine to machine (training curves, timings, the device), so what it stored is one
   run's value. A number such a cell prints counts as printed only if the cell's own source
   spells it out (a question it echoes, an argument it shows), or if the prose quotes it at the
   precision the cell asserts: its value, at the precision written, is a number literal of that
   cell or of the guard cells under it (``assert round(share, 2) == 0.84``; ``assert loss < 1.7``
   for prose "below 1.7"). Otherwise the number needs one of the classes below, or it is a
   finding.

2. **set by the code**: the value, exactly, is a number literal of one of the notebook's code
   cells, guard cells included (strings and comments are not code): a configuration the text
   states and the code uses ("800 steps" where the code says ``steps=800``), or a bound the text
   says a cell asserts ("the cell asserts above 2 nats").

3. **quotation**: the number stands inside double quotes (``"..."`` or ``“...”``) and the sentence
   holding the quote names its source: the chapter (the word "chapter"), an author-year
   citation ("Touvron et al., 2023", "Xiong et al. (2020)", "nostalgebraist 2020"), a
   datasheet, or the model's name.

4. **definition**: a row of ``docs/prose_numbers.md`` names the notebook and the number as
   written, with its kind and its reason: a year in a citation, a published figure with its
   source, the definition of a unit or of an exercise's target. A row whose "number" is a
   phrase covers every number inside that phrase in that notebook.

Anything else is a finding, reported with the notebook, the cell, the number and its sentence.
A row of the definitions file that its notebook no longer contains fails the test (a stale
row), and so does a row that no number needs (every number it covers is printed or set).

Not checked, and why:

* link targets and URLs, and HTML tags: addresses, not statements;
* inline code spans and fenced code blocks: code the reader can run, not statements about it;
* heading numbers (``## 5.``), list and question numbering (``1. `` at a line start,
  ``**3.**``): they number the text;
* references to a part of the course or of a source: notebook numbers written with a leading
  zero (``00``-``09``: ``**01**``, ``03 ·``, "the difference from 03") and a number after
  "notebook", "section", "exercise", "question", "table" or "chapter" ("sections 4 and 5",
  "Table 2", "chapter 1.4");
* numbers that are part of a name, glued to a letter on their left (``GPT-2``, ``A100``,
  ``fp32``, ``SHA-256``);
* integers that are the structure of a formula: in LaTeX math (``$...$``, ``$$...$$``), a
  single-digit integer, anything in a superscript or subscript (``x^2``, ``W_1``,
  ``10^{-5}``), and the digits of ``\\tfrac12``; in math and in plain text, an integer glued to
  a variable on its right, directly or by ``·`` (``8d²``, ``2N``, ``12·L·d²``, ``$4d^2$``,
  ``$2T^2$``). Every other number in math is checked like the prose (``$d_k = 128$``,
  ``$\\ln 16 = 2.77$``, ``$4{,}224$``).

Run ``python tests/test_prose_numbers.py`` for the per-notebook counts and every finding.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[0-9]_*.ipynb"))
DEFINITIONS = ROOT / "docs" / "prose_numbers.md"
KINDS = {"citation", "published", "definition", "version", "name"}
MACHINE_VARYING = "nbval-ignore-output"

SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
SCALES = {
    "k": 3, "K": 3, "M": 6, "B": 9, "T": 12,
    "thousand": 3, "million": 6, "billion": 9, "trillion": 12,
}  # fmt: skip
NUMBER = re.compile(
    r"""
    (?P<sign>[-−±])?
    (?P<int>\d{1,3}(?:(?:,|\{,\}|\u202f|\u2009)\d{3})+(?!\d)|\d+)
    (?:\.(?P<frac>\d+))?
    (?:
        (?P<exp>[eE][-+−]?\d+)(?![A-Za-z])
      | (?P<times>\s?[·×]\s?10)(?P<tsup>⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)
      | (?P<sup>⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)
    )?
    (?P<pct>\s?%|\s(?:percent|per\ cent|points)\b)?
    (?P<scale>(?:[kKMBT](?![A-Za-z]))|[\s-](?:thousand|million|billion|trillion)\b)?
    """,
    re.VERBOSE,
)
# a letter (or a letter and a hyphen) just before a number makes it part of a name: GPT-2, A100
NAME_BEFORE = re.compile(r"(?:[A-Za-z_]|[A-Za-z]-)\Z")
# a variable just after a number makes it a coefficient: 8d², 2N, 12·L·d², 4d^2
VARIABLE_AFTER = re.compile(r"·?(?!(?:st|nd|rd|th)\b)[A-Za-z\\]")
REFERENCE = re.compile(
    r"\b(?:notebooks?|sections?|exercises?|questions?|tables?|chapters?)\s+"
    r"\d+(?:\.\d+)?(?:\s*(?:,|and|or|to|–|-)\s*\d+(?:\.\d+)?)*",
    re.IGNORECASE,
)
NOTEBOOK_NUMBER = re.compile(r"0\d")
APPROXIMATE = re.compile(r"(?:≈|~|\\approx|\b(?:about|roughly|around|approximately|some))\s*\Z")
HEADING = re.compile(r"^#{1,6}[ \t]+(\d+(?:\.\d+)*\.?)", re.MULTILINE)
LIST_NUMBER = re.compile(
    r"^[ \t]*(?:\*\*)?(\d+)\.(?:\*\*)?(?=[ \t])|^[ \t]*\*\*(\d+)\.", re.MULTILINE
)
QUOTE = re.compile(r'"[^"\n]*(?:\n[^"\n]*)?"|“[^”]*”')
SOURCE = re.compile(
    r"\b(?i:chapter|datasheet|the model's name)\b"
    r"|\b[A-Z][A-Za-z-]+(?: et al\.| and [A-Z][A-Za-z-]+)?,? \(?(?:19|20)\d\d\b"
    r"|\bnostalgebraist,? (?:19|20)\d\d\b"
)
# where a sentence ends: at . ! ? : ; before a capital (inline code counts as one), a blank
# line, or a list item
SENTENCE_END = re.compile(
    r"(?<![ .]e\.g)(?<![ .]i\.e)(?<!\bal)[.!?:;](?=\s+[A-Z*\"“(`])"
    r"|\n[ \t]*\n|\n(?=[ \t]*(?:[-*+]|\d+\.)[ \t])"
)
# display math, then inline math (which may run over a line break, not over a blank line)
MATH = re.compile(r"\$\$.+?\$\$|(?<!\\)\$(?:[^$\n]|\n(?![ \t]*\n))+?\$", re.DOTALL)
ROW = re.compile(r"^\|(?P<cells>.*)\|\s*$")


@dataclass(frozen=True)
class Number:
    """A number as written: its text, its value, and the unit of its last written digit."""

    text: str
    value: Decimal
    quantum: Decimal
    signed: bool  # written with a minus

    @property
    def key(self) -> str:
        return normalise(self.text)


def normalise(text: str) -> str:
    return re.sub(r"\{,\}|[,\u202f\u2009 ]", "", text).replace("−", "-")


def parse(match: re.Match) -> Number:
    digits = re.sub(r"\D", "", match["int"])
    frac = match["frac"] or ""
    value = Decimal(f"{digits}.{frac}" if frac else digits)
    quantum = Decimal(1).scaleb(-len(frac))
    if match["exp"]:
        e = int(match["exp"][1:].replace("−", "-"))
        value, quantum = value.scaleb(e), quantum.scaleb(e)
    elif match["times"]:
        e = int(match["tsup"].translate(SUPERSCRIPTS))
        value, quantum = value.scaleb(e), quantum.scaleb(e)
    elif match["sup"]:
        e = int(match["sup"].translate(SUPERSCRIPTS))
        value = value**e if e >= 0 else Decimal(1) / value ** (-e)
        quantum = min(Decimal(1), value)  # a power is exact: 10⁹ is 1,000,000,000, 10⁻³ is 0.001
    if match["pct"]:
        value, quantum = value.scaleb(-2), quantum.scaleb(-2)
    if match["scale"]:
        s = SCALES[match["scale"].strip().lstrip("-")]
        value, quantum = value.scaleb(s), quantum.scaleb(s)
    signed = match["sign"] in ("-", "−")
    return Number(match[0].strip(), -value if signed else value, quantum, signed)


def approximate(number: Number, before: str) -> Number:
    """After "about", "≈" or "~", the trailing zeros of an integer of four or more digits are
    not significant: "≈ 22,000" is 22,000 to the nearest thousand."""
    digits = re.sub(r"\D", "", number.text)
    zeros = len(digits) - len(digits.rstrip("0"))
    if not (APPROXIMATE.search(before) and len(digits) >= 4 and zeros and number.quantum == 1):
        return number
    return Number(number.text, number.value, Decimal(1).scaleb(zeros), number.signed)


def numbers_in(text: str) -> list[tuple[int, int, Number]]:
    """Every number token of a text, with its span; a sign only where no word stands before it."""
    found = []
    for m in NUMBER.finditer(text):
        start = m.start()
        if m["sign"] and start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
            start += 1
            m = NUMBER.match(text, start)
        if start > 0 and (text[start - 1].isdigit() or text[start - 1] == "."):
            continue  # the tail of something else (1.2.3, a version)
        found.append((start, m.end(), parse(m)))
    return found


# ----------------------------------------------------------------------------- the notebooks


@dataclass
class Token:
    """A number of a markdown cell, with where it stands and what makes it exempt, if anything."""

    notebook: str
    cell: int
    start: int
    end: int
    number: Number
    sentence: str
    quoted_with_source: bool
    skipped: str | None = None  # why it is not checked


@dataclass
class Printed:
    """A number printed by a code cell."""

    number: Number
    cell: int
    machine_varying: bool


@dataclass
class Notebook:
    name: str
    cells: list[dict]
    printed: list[Printed] = field(default_factory=list)
    literals: set[Decimal] = field(default_factory=set)
    asserted: dict[int, set[Decimal]] = field(default_factory=dict)  # cell -> literals
    tokens: list[Token] = field(default_factory=list)


def blank(text: str, start: int, end: int, fill: str = " ") -> str:
    """Replace text[start:end] by `fill`, keeping its line breaks (offsets stay valid)."""
    return text[:start] + re.sub(r"[^\n]", fill, text[start:end]) + text[end:]


def masked_markdown(source: str) -> tuple[str, list[tuple[int, int]]]:
    """The source with code, links, URLs and HTML tags blanked; and the spans of its math."""
    text = source
    for pattern in (
        r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$",  # fenced code blocks
        r"(`+)(?:(?!\n[ \t]*\n).)+?\1",  # inline code, within a paragraph
        r"\]\([^)]*\)",  # link targets
        r"<https?://[^>]*>|https?://\S+",  # URLs
        r"<[^>\n]+>",  # HTML tags
    ):
        for m in list(re.finditer(pattern, text, re.MULTILINE | re.DOTALL)):
            text = blank(text, m.start(), m.end())
    math = [(m.start(), m.end()) for m in MATH.finditer(text)]
    return text, math


def masked_math(text: str) -> str:
    """Math with its scripts and the digits of \\tfrac12 blanked (they are formula structure)."""
    script = re.compile(r"[\^_](?:\{(?:[^{}]|\{[^{}]*\})*\}|\\[A-Za-z]+|.)")
    for m in list(script.finditer(text)):
        text = blank(text, m.start(), m.end())
    for m in list(re.finditer(r"\\[td]?frac(\d+)", text)):
        text = blank(text, m.start(1), m.end(1))
    return text


def sentence_around(source: str, start: int, end: int) -> tuple[int, int]:
    ends = [m.end() for m in SENTENCE_END.finditer(source)]
    left = max([e for e in ends if e <= start], default=0)
    right = min([e for e in ends if e >= end], default=len(source))
    return left, right


def markdown_tokens(name: str, index: int, source: str) -> list[Token]:
    text, math = masked_markdown(source)
    in_math = [False] * len(text)
    checked = text
    for a, b in math:
        checked = checked[:a] + masked_math(checked[a:b]) + checked[b:]
        in_math[a:b] = [True] * (b - a)
    exempt: dict[int, str] = {}
    for m in HEADING.finditer(checked):
        exempt[m.start(1)] = "heading number"
    for m in LIST_NUMBER.finditer(checked):
        exempt[m.start(1) if m[1] else m.start(2)] = "list or question number"
    for m in REFERENCE.finditer(checked):
        for n in re.finditer(r"\d+(?:\.\d+)?", m[0]):
            exempt.setdefault(m.start() + n.start(), "reference")
    quotes = [(m.start(), m.end()) for m in QUOTE.finditer(text)]
    tokens = []
    for start, end, number in numbers_in(checked):
        number = approximate(number, checked[max(0, start - 16) : start])
        a, b = sentence_around(source, start, end)
        sentence = " ".join(source[a:b].split())
        quoted = any(q0 < start and end < q1 for q0, q1 in quotes) and bool(
            SOURCE.search(text[a:b])
        )
        token = Token(name, index, start, end, number, sentence, quoted)
        digits_at = start + (1 if number.text[0] in "-−±" else 0)
        after = checked[end : end + 3]
        integer = bool(re.fullmatch(r"[-−±]?[\d,{}\u202f\u2009]+", number.text))
        if digits_at in exempt:
            token.skipped = exempt[digits_at]
        elif NAME_BEFORE.search(checked[max(0, start - 2) : start]):
            token.skipped = "part of a name"
        elif NOTEBOOK_NUMBER.fullmatch(number.text):
            token.skipped = "notebook number"
        elif integer and VARIABLE_AFTER.match(after):
            token.skipped = "formula coefficient"
        elif in_math[start] and re.fullmatch(r"[-−±]?\d+[kKMBT]", number.text):
            token.skipped = "formula coefficient"  # 2T^2: T is a variable here, not a trillion
        elif in_math[start] and integer and len(number.text.lstrip("-−±")) == 1:
            token.skipped = "formula integer"
        tokens.append(token)
    return tokens


def output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]))
        data = out.get("data", {})
        for key in ("text/plain", "text/markdown"):
            if key in data:
                parts.append("".join(data[key]))
        if "text/html" in data:
            parts.append(re.sub(r"<[^>]*>", " ", "".join(data["text/html"])))
    return "\n".join(parts)


def code_literals(source: str) -> set[Decimal]:
    """The number literals of a code cell (strings and comments left out)."""
    values = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NUMBER and not tok.string.endswith(("j", "J")):
                text = tok.string.replace("_", "").lower()
                if text.startswith(("0x", "0o", "0b")):
                    values.add(Decimal(int(text, 0)))
                else:
                    values.add(Decimal(text))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        for m in re.finditer(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?", source):
            values.add(Decimal(m[0].replace("_", "")))
    return values


@cache
def load(path: Path) -> Notebook:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    nb = Notebook(path.stem, cells)
    lesson_cell = None
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            nb.tokens.extend(markdown_tokens(path.stem, i, source))
            continue
        if cell["cell_type"] != "code":
            continue
        literals = code_literals(source)
        nb.literals |= literals
        if "guard" in cell["metadata"].get("tags", []) and lesson_cell is not None:
            nb.asserted[lesson_cell] |= literals
            continue
        lesson_cell = i
        nb.asserted[i] = set(literals)
        varying = MACHINE_VARYING in cell["metadata"].get("tags", [])
        spelled = {n.key for _, _, n in numbers_in(source)}
        for _, _, number in numbers_in(output_text(cell)):
            nb.printed.append(Printed(number, i, varying and number.key not in spelled))
    return nb


# ------------------------------------------------------------------------ the definitions file


@dataclass(frozen=True)
class Definition:
    notebook: str
    number: str
    kind: str
    reason: str
    line: int

    @property
    def is_phrase(self) -> bool:
        found = numbers_in(self.number)
        return not (len(found) == 1 and found[0][2].text == self.number.strip())


@cache
def definitions() -> list[Definition]:
    rows = []
    for n, line in enumerate(DEFINITIONS.read_text(encoding="utf-8").splitlines(), 1):
        m = ROW.match(line)
        if not m:
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", m["cells"])]
        if cells[0] in ("notebook", "") or set(cells[0]) <= set("-: "):
            continue
        assert len(cells) == 4, f"{DEFINITIONS.name}:{n}: a row has four columns: {line}"
        rows.append(Definition(*cells, line=n))
    return rows


# ------------------------------------------------------------------------- the classification


def rounds_to(printed: Number, prose: Number) -> bool:
    if printed.quantum > prose.quantum:
        return False
    value = printed.value if prose.signed else abs(printed.value)
    return abs(value - prose.value) * 2 <= prose.quantum


def covering_rows(nb: Notebook, token: Token) -> list[Definition]:
    rows = []
    source = "".join(nb.cells[token.cell]["source"])
    for row in definitions():
        if row.notebook != nb.name:
            continue
        if row.is_phrase:
            for m in re.finditer(re.escape(row.number), source):
                if m.start() <= token.start and token.end <= m.end():
                    rows.append(row)
                    break
        elif normalise(row.number) == token.number.key:
            rows.append(row)
    return rows


NOT_QUANTITIES = {"name", "version"}


def classify(nb: Notebook, token: Token) -> tuple[str, str]:
    """(class, detail) for one checked number."""
    number = token.number
    rows = covering_rows(nb, token)
    if any(row.kind in NOT_QUANTITIES for row in rows):
        return "definition", ""  # part of a name or a version: not a quantity at all
    matches = [p for p in nb.printed if rounds_to(p.number, number)]
    if any(not p.machine_varying for p in matches):
        return "printed", ""
    steady = [p for p in matches if p.machine_varying]
    exact = {number.value, abs(number.value)}
    if steady and any(exact & nb.asserted.get(p.cell, set()) for p in steady):
        return "printed", "machine-varying, at the asserted precision"
    if exact & nb.literals:
        return "set by the code", ""
    if token.quoted_with_source:
        return "quotation", ""
    if rows:
        return "definition", ""
    if steady:
        cells = sorted({p.cell for p in steady})
        return "finding", (
            f"printed only by machine-varying cell(s) {cells} (as {steady[0].number.text}), and "
            "no assertion there states it at the precision written"
        )
    near = [
        p for p in nb.printed if abs(abs(p.number.value) - abs(number.value)) <= number.quantum * 5
    ]
    if near:
        shown = sorted({p.number.text for p in near})[:4]
        return (
            "finding",
            f"not printed at the precision written; printed nearby: {', '.join(shown)}",
        )
    return "finding", "not printed, not in the code, not quoted, not defined"


@dataclass
class Report:
    counts: dict[str, Counter]
    skipped: dict[str, Counter]
    findings: list[tuple[Token, str]]
    stale: list[Definition]
    unused: list[Definition]


@cache
def report() -> Report:
    counts: dict[str, Counter] = {}
    skipped: dict[str, Counter] = {}
    findings = []
    used: set[Definition] = set()
    keys: dict[str, set[str]] = defaultdict(set)
    for path in NOTEBOOKS:
        nb = load(path)
        counts[nb.name], skipped[nb.name] = Counter(), Counter()
        for token in nb.tokens:
            keys[nb.name].add(token.number.key)
            if token.skipped:
                skipped[nb.name][token.skipped] += 1
                continue
            kind, detail = classify(nb, token)
            counts[nb.name][kind] += 1
            if kind == "finding":
                findings.append((token, detail))
            elif kind == "definition":
                used.update(covering_rows(nb, token))
    stale, unused = [], []
    for row in definitions():
        path = ROOT / "notebooks" / f"{row.notebook}.ipynb"
        if not path.is_file():
            stale.append(row)
            continue
        nb = load(path)
        if row.is_phrase:
            present = any(
                row.number in "".join(c["source"]) for c in nb.cells if c["cell_type"] == "markdown"
            )
        else:
            present = normalise(row.number) in keys[row.notebook]
        if not present:
            stale.append(row)
        elif row not in used:
            unused.append(row)
    return Report(counts, skipped, findings, stale, unused)


COLUMNS = ("printed", "set by the code", "quotation", "definition", "finding")


def summary(r: Report) -> str:
    lines = [f"{'notebook':36s} " + " ".join(f"{c:>15s}" for c in COLUMNS) + "  not checked"]
    total = Counter()
    for name, counts in r.counts.items():
        total += counts
        lines.append(
            f"{name:36s} "
            + " ".join(f"{counts[c]:15d}" for c in COLUMNS)
            + f"  {sum(r.skipped[name].values()):11d}"
        )
    skipped_all = sum(sum(s.values()) for s in r.skipped.values())
    lines.append(
        f"{'all':36s} " + " ".join(f"{total[c]:15d}" for c in COLUMNS) + f"  {skipped_all:11d}"
    )
    return "\n".join(lines)


def describe(token: Token, detail: str) -> str:
    sentence = token.sentence if len(token.sentence) <= 240 else token.sentence[:237] + "..."
    return f"{token.notebook} cell {token.cell}: {token.number.text!r} ({detail})\n    {sentence}"


# ------------------------------------------------------------------------------------- tests


def test_prints_the_counts_per_notebook(capsys):
    r = report()
    with capsys.disabled():
        print("\nprose numbers, per notebook:\n" + summary(r))
        print(
            f"{len(r.findings)} finding(s); {len(r.stale)} stale, {len(r.unused)} unneeded row(s)"
        )
    assert sum(sum(c.values()) for c in r.counts.values()) > 0


def test_the_definitions_file_has_specific_rows_with_reasons():
    rows = definitions()
    assert rows, f"{DEFINITIONS} holds no rows"
    seen = set()
    for row in rows:
        where = f"{DEFINITIONS.name}:{row.line}"
        assert row.kind in KINDS, f"{where}: kind {row.kind!r} is not one of {sorted(KINDS)}"
        assert len(row.reason.split()) >= 4, f"{where}: give a reason, not {row.reason!r}"
        assert numbers_in(row.number), f"{where}: {row.number!r} holds no number"
        assert (row.notebook, row.number) not in seen, f"{where}: a second row for the same number"
        seen.add((row.notebook, row.number))


def test_no_stale_rows_in_the_definitions_file():
    stale = report().stale
    if stale:
        pytest.fail(
            "rows of docs/prose_numbers.md that their notebook no longer contains (delete them):\n"
            + "\n".join(f"  line {r.line}: {r.notebook} {r.number}" for r in stale)
        )


def test_no_row_of_the_definitions_file_is_unneeded():
    unused = report().unused
    if unused:
        pytest.fail(
            "rows of docs/prose_numbers.md whose numbers are all printed, set by the code or "
            "quoted (delete them):\n"
            + "\n".join(f"  line {r.line}: {r.notebook} {r.number}" for r in unused)
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_every_prose_number_is_printed_set_quoted_or_defined(path):
    findings = [(t, d) for t, d in report().findings if t.notebook == path.stem]
    if findings:
        pytest.fail(
            f"{len(findings)} number(s) in the markdown of {path.name} that no cell prints, the "
            "code does not set, no quotation attributes to a source and docs/prose_numbers.md "
            "does not list. Print each from a code cell (at the precision written; from a "
            "machine-varying cell, at the precision its guard asserts), reword the sentence, or, "
            "for a citation year, a published figure, a definition, a version or a name, add a "
            "row with its reason:\n" + "\n".join(describe(t, d) for t, d in findings),
            pytrace=False,
        )


def test_the_extraction_rules():
    def numbers(text):
        return [(t.number.text, t.skipped) for t in markdown_tokens("x", 0, text)]

    assert numbers("## 5. Train 800 steps") == [("5", "heading number"), ("800", None)]
    assert numbers("**3.** GPT-2 has 50,257 tokens") == [
        ("3", "list or question number"),
        ("2", "part of a name"),
        ("50,257", None),
    ]
    assert numbers("see `steps=800` and [this](https://x.org/1)") == []
    assert numbers("notebook 03, sections 4 and 5, **01**") == [
        ("03", "reference"),
        ("4", "reference"),
        ("5", "reference"),
        ("01", "notebook number"),
    ]
    assert numbers("$5! = 120$ and $x^{12}$, $\\tfrac12$, 8d² and $4d^2 + 4d = 4{,}224$") == [
        ("5", "formula integer"),
        ("120", None),
        ("8", "formula coefficient"),
        ("4", "formula coefficient"),
        ("4", "formula coefficient"),
        ("4{,}224", None),
    ]
    (token,) = markdown_tokens("x", 0, "A rate of 3·10⁻² here.")
    assert (token.number.value, token.number.quantum) == (Decimal("0.03"), Decimal("0.01"))
    (token,) = markdown_tokens("x", 0, 'The chapter says "about 100" lines.')
    assert token.quoted_with_source
    (token,) = markdown_tokens("x", 0, 'It says "about 100" lines.')
    assert not token.quoted_with_source
    tokens = markdown_tokens("x", 0, 'Their analysis (Xiong et al., 2020) gives "1/√L".')
    assert [(t.number.text, t.quoted_with_source) for t in tokens] == [("2020", False), ("1", True)]
    (token,) = markdown_tokens("x", 0, "a ratio $e^{10} \\approx 22{,}000$")
    assert (token.number.value, token.number.quantum) == (Decimal(22000), Decimal(1000))
    (token,) = markdown_tokens("x", 0, "at least 25 points more")
    assert token.number.value == Decimal("0.25")


def test_the_matching_rule():
    def num(text):
        ((_, _, n),) = numbers_in(text)
        return n

    assert rounds_to(num("0.300"), num("0.30")) and rounds_to(num("0.2996"), num("0.30"))
    assert not rounds_to(num("0.3"), num("0.30")) and not rounds_to(num("0.31"), num("0.30"))
    assert rounds_to(num("0.125"), num("0.12"))
    assert rounds_to(num("842,752"), num("0.84 million"))
    assert rounds_to(num("0.1234"), num("12%")) and not rounds_to(num("12"), num("12%"))
    assert rounds_to(num("-0.3"), num("0.3")) and not rounds_to(num("0.3"), num("−0.3"))
    assert rounds_to(num("6,738,415,616"), num("7B"))


if __name__ == "__main__":
    r = report()
    print(summary(r))
    for token, detail in r.findings:
        print(describe(token, detail))
    for row in r.stale:
        print(f"stale: line {row.line}: {row.notebook} {row.number}")
