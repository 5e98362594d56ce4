"""The store's symbols: every dim symbol is declared here with a kind (``input``,
``data`` or ``alias``), the provenance of whatever made it, and its domain's lower
bound (``z3bridge.domain_bound``, the one home of the dim domain)."""
from __future__ import annotations

import itertools

from .. import expr as E
from ..constraints import Provenance
from ..lazy import sympy
from ..record import Record
from ..z3bridge import domain_bound


class SymbolInfo(Record):
    """One declared symbol: ``symbol``, ``kind`` ("input" | "data" | "alias": an alias
    stands for a capped expression), ``origin`` (the Provenance of what made it),
    ``generated`` (a name made up by us: an anonymous input dim, a data symbol),
    ``upper`` (data symbols: a known upper bound expression) and ``serial``."""

    __slots__ = ("symbol", "kind", "origin", "generated", "upper", "serial")
    _parts = __slots__

    def __init__(self, symbol: "sympy.Symbol", kind: str, origin: Provenance, generated: bool = False,
                 upper: object = None, serial: int = 0):
        self.symbol = symbol
        self.kind = kind
        self.origin = origin
        self.generated = generated
        self.upper = upper
        self.serial = serial

    @property
    def name(self) -> str:
        return self.symbol.name


class Domain(Record):
    """Named domain assumptions.  Off by default; each one is visible:
    ``inputs_positive`` (every input dim >= 1), ``no_broadcast_one`` (symbolic dims are
    never 1 when broadcasting)."""

    _parts = ("inputs_positive", "no_broadcast_one")

    def __init__(self, inputs_positive: bool = False, no_broadcast_one: bool = False):
        self.inputs_positive = inputs_positive
        self.no_broadcast_one = no_broadcast_one

    def describe(self) -> list[str]:
        out = []
        if self.inputs_positive:
            out.append("input dims are at least 1 (inputs_positive)")
        if self.no_broadcast_one:
            out.append("symbolic dims are never 1 when broadcasting (no_broadcast_one)")
        return out


class Symbols:
    """Declared symbols by name, the user names generated names must avoid, and the
    domain.  Invariant: a name is declared once (a second ``declare`` returns the first
    symbol) and no generated name equals a declared or reserved one."""

    def __init__(self, domain: Domain, serial=None):
        self.domain = domain
        self.symbols: dict[str, SymbolInfo] = {}
        self.reserved: set[str] = set()   # user names that generated names must avoid
        self.names: dict[str, int] = {}   # base name -> last suffix given (fresh_name)
        self._serial = serial if serial is not None else itertools.count()

    def copy(self) -> "Symbols":
        """The same declarations, its own additions (serial numbers stay unique across both)."""
        new = Symbols(self.domain, self._serial)
        new.symbols = dict(self.symbols)
        new.reserved = set(self.reserved)
        new.names = dict(self.names)
        return new

    def fresh_name(self, hint: str) -> str:
        """A name no declared or reserved (user) name uses."""
        base = "".join(ch if (ch.isalnum() or ch == "_") else "_" for ch in hint) or "d"
        if base[0].isdigit():
            base = "_" + base
        if base not in self.symbols and base not in self.names and base not in self.reserved:
            self.names[base] = 0
            return base
        while True:
            self.names[base] = self.names.get(base, 0) + 1
            name = f"{base}_{self.names[base]}"
            if name not in self.symbols and name not in self.reserved:
                return name

    def declare(self, name: str, kind: str, origin: Provenance, generated: bool, upper) -> tuple:
        """(symbol, new?): the symbol of ``name``, declared now unless it was already."""
        info = self.symbols.get(name)
        if info is not None:
            return info.symbol, False
        s = E.symbol(name)
        self.symbols[name] = SymbolInfo(s, kind, origin, generated, upper, next(self._serial))
        return s, True

    def info(self, s) -> SymbolInfo | None:
        return self.symbols.get(s.name) if isinstance(s, sympy.Symbol) else None

    def input_symbols(self) -> list[SymbolInfo]:
        return [i for i in self.symbols.values() if i.kind == "input"]

    def lower_bound(self, s) -> int | None:
        """The domain's lower bound of symbol ``s`` (the one home: z3bridge.domain_bound)."""
        info = self.info(s)
        return domain_bound(s, info.kind if info else None, self.domain.inputs_positive)

    def adopt_names(self, other: "Symbols", declare):
        """Declare (with ``declare``) the symbols ``other`` (a fork's) made, and take its
        name counters, so names never collide."""
        for name, info in other.symbols.items():
            if name not in self.symbols:
                declare(name, "data", info.origin, generated=True)
        for base, k in other.names.items():
            self.names[base] = max(self.names.get(base, 0), k)
