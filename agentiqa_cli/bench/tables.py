"""Read score tables (CSV, whitespace text, .xlsx) with line numbers for error messages,
and find files in dataset folders whose names differ in case from the score file's."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from agentiqa_cli.errors import ConfigError


def _norm(name: str) -> str:
    return " ".join(name.replace("_", " ").split()).lower()


@dataclass
class Table:
    """A header and its data rows; each row keeps its 1-based line (or sheet row) number."""

    path: Path
    header: list[str]
    rows: list[tuple[int, list[str]]]

    def col(self, *names: str) -> int:
        """Index of the first column whose name matches one of ``names`` (case, _ and spaces
        ignored); a ConfigError naming the file and its columns otherwise."""
        wanted = [_norm(n) for n in names]
        normed = [_norm(h) for h in self.header]
        for w in wanted:
            if w in normed:
                return normed.index(w)
        raise ConfigError(
            f"{self.path}: no column {names[0]!r}; columns are: {', '.join(self.header) or '(none)'}"
        )

    def has(self, *names: str) -> bool:
        normed = {_norm(h) for h in self.header}
        return any(_norm(n) in normed for n in names)

    @staticmethod
    def cell(row: list[str], index: int) -> str:
        return row[index].strip() if index < len(row) else ""

    def number(self, line: int, row: list[str], index: int, what: str) -> float:
        text = self.cell(row, index)
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{self.path}:{line}: {what} {text!r} is not a number") from None
        if value != value:
            raise ConfigError(f"{self.path}:{line}: {what} is NaN")
        return value


def read_csv(path: Path, header: bool = True) -> Table:
    """A comma-separated file (semicolon or tab if the first line has no comma); BOM-safe."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        text = path.read_text(encoding="latin-1")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    lines = text.splitlines()
    first = lines[0] if lines else ""
    delim = "," if "," in first else ";" if ";" in first else "\t" if "\t" in first else ","
    rows = [
        (n, r)
        for n, r in enumerate(csv.reader(lines, delimiter=delim), 1)
        if any(c.strip() for c in r)
    ]
    if not header:
        return Table(path, [], rows)
    if not rows:
        raise ConfigError(f"{path}: empty file")
    return Table(path, [h.strip() for h in rows[0][1]], rows[1:])


def read_xlsx(path: Path) -> Table:
    """The first sheet of an .xlsx workbook; needs openpyxl (an optional dependency)."""
    if path.suffix.lower() == ".xls":
        raise ConfigError(
            f"{path}: old-style .xls workbooks are not read; open it in a spreadsheet program and "
            f"save it as CSV ({path.with_suffix('.csv').name}) next to it"
        )
    # optional extra: openpyxl (xlsx tables)
    try:
        import openpyxl
    except ImportError:
        raise ConfigError(
            f"{path}: reading .xlsx needs the openpyxl package (pip install openpyxl); or export "
            f"the sheet as CSV ({path.with_suffix('.csv').name}) and pass that"
        ) from None
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises zipfile/KeyError/InvalidFileException alike
        raise ConfigError(f"{path}: cannot read workbook: {e}") from None
    try:
        rows = [
            (n, ["" if v is None else _cell_text(v) for v in values])
            for n, values in enumerate(wb.worksheets[0].iter_rows(values_only=True), 1)
            if any(v is not None and str(v).strip() for v in values)
        ]
    finally:
        wb.close()
    if not rows:
        raise ConfigError(f"{path}: the first sheet is empty")
    return Table(path, [h.strip() for h in rows[0][1]], rows[1:])


def _cell_text(v: object) -> str:
    # sheets store image numbers as floats (1.0); keep them integral so names format right
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def read_table(path: Path) -> Table:
    if path.suffix.lower() in (".xlsx", ".xlsm", ".xls"):
        return read_xlsx(path)
    return read_csv(path)


@dataclass
class Folder:
    """Case-insensitive file lookup in one folder (TID2013 mixes ``I01.BMP`` and ``i25.bmp``)."""

    path: Path
    _index: dict[str, Path] | None = field(default=None, repr=False)

    def find(self, name: str) -> Path:
        """The file called ``name`` in any letter case; the exact path if none exists."""
        exact = self.path / name
        if exact.exists():
            return exact
        if self._index is None:
            try:
                self._index = {p.name.lower(): p for p in self.path.iterdir()}
            except OSError:
                self._index = {}
        return self._index.get(name.lower(), exact)


def find_dir(root: Path, *names: str) -> Path | None:
    """The first existing sub-folder of ``root`` called one of ``names``, in any letter case."""
    try:
        subdirs = {p.name.lower(): p for p in root.iterdir() if p.is_dir()}
    except OSError:
        return None
    for n in names:
        if n.lower() in subdirs:
            return subdirs[n.lower()]
    return None
