"""Turn command-line PATHS (files, folders, globs) into image jobs, each with its reference."""

from __future__ import annotations

import fnmatch
import glob
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agentiqa_cli.errors import ConfigError
from agentiqa_cli.imaging.load import display_path, missing

IMAGE_EXTENSIONS = frozenset(
    [
        ".jpg",
        ".jpeg",
        ".jpe",
        ".png",
        ".bmp",
        ".tif",
        ".tiff",
        ".webp",
        ".gif",
        ".ppm",
        ".pgm",
        ".pnm",
        ".tga",
        ".jp2",
        ".j2k",
        ".jxl",
        ".heic",
        ".avif",
    ]
)


@dataclass(frozen=True)
class Job:
    """One image to assess. ``error`` is set when the job is already known to fail."""

    image: Path
    root: Path  # the folder it was found under (for pairing by relative path)
    reference: Path | None = None
    error: str = ""
    tag: str = ""  # a caller's id (a question id, a manifest row): part of the resume key

    @property
    def name(self) -> str:
        return display_path(self.image)

    @property
    def ref_name(self) -> str:
        return display_path(self.reference) if self.reference else ""


def _is_image(p: Path) -> bool:
    return p.suffix.lower() in IMAGE_EXTENSIONS


def _folders(
    top: Path, onerror: Callable[[OSError], None]
) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk`` following links (so linked folders count), each folder once: (device,
    inode) bookkeeping breaks loops. ``dirnames`` comes sorted; prune it in place."""
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(top, onerror=onerror, followlinks=True):
        try:
            st = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirnames.sort()
        yield dirpath, dirnames, filenames


def _walk(folder: Path, recursive: bool) -> list[Path]:
    found: list[Path] = []
    if not recursive:
        try:
            entries = sorted(folder.iterdir())
        except OSError as e:
            raise ConfigError(f"{display_path(folder)}: cannot list folder: {e.strerror}") from None
        return [p for p in entries if _is_image(p) and not p.is_dir()]
    unreadable: list[Path] = []

    def report(e: OSError) -> None:  # a sub-folder we cannot list: its own error row
        if Path(str(e.filename)) == folder:
            raise ConfigError(f"{display_path(folder)}: cannot list folder: {e.strerror}")
        unreadable.append(Path(str(e.filename)))

    for dirpath, _, filenames in _folders(folder, report):
        found.extend(Path(dirpath) / f for f in sorted(filenames) if _is_image(Path(f)))
    return found + unreadable


def _is_dir(path: Path) -> bool:
    """``Path.is_dir``, but False where a folder on the way may not be searched (there,
    ``Path.is_dir`` raises PermissionError)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _present(path: Path) -> bool:
    """There (a dangling link too), or not reachable for permissions: either way one
    input, whose row says why it cannot be read."""
    try:
        os.lstat(path)
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _unlisted(path: Path) -> str:
    """Why a folder found by a recursive walk could not be listed ("" for files)."""
    if not _is_dir(path):
        return ""
    try:
        with os.scandir(path):
            pass
    except OSError as e:
        return (
            f"{display_path(path)}: cannot list folder: {e.strerror or e}; its images are skipped"
        )
    return ""


def _fixed_prefix(pattern: str) -> Path:
    parts = Path(pattern).parts
    fixed = []
    for part in parts[:-1]:
        if glob.has_magic(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _lists(parts: tuple[str, ...], pattern: tuple[str, ...], recursive: bool) -> bool:
    """Whether a glob search for ``pattern`` lists the folder ``parts`` (both relative to the
    pattern's fixed prefix): the folder matches a proper prefix of the pattern. As glob:
    ``**`` spans folders only when recursive, and neither ``*`` nor ``**`` enters a hidden
    folder unless the pattern's part starts with a dot."""
    if not parts:
        return bool(pattern)
    if not pattern:
        return False
    head, name = pattern[0], parts[0]
    if recursive and head == "**":
        deeper = not name.startswith(".") and _lists(parts[1:], pattern, recursive)
        return deeper or _lists(parts, pattern[1:], recursive)
    if name.startswith(".") and not head.startswith("."):
        return False
    return fnmatch.fnmatch(name, head) and _lists(parts[1:], pattern[1:], recursive)


def _unsearched(pattern: str, recursive: bool) -> tuple[list[Path], list[Path]]:
    """The folders a glob search for ``pattern`` had to list but could not (glob skips them
    without a word), found by walking the same folders again: (those that are inputs of
    the run and get an error row, those only passed through and get a warning).

    Inputs: the pattern's fixed prefix (named on the command line) and the folders its
    recursive part (``**`` with -R) had to search. Passed through: a folder an intermediate
    wildcard crosses (``/home/*/photos/*.jpg`` and other users' homes). Only patterns with
    a wildcard above the file name are walked; the others list their fixed prefix alone."""
    root = _fixed_prefix(pattern)
    rest = Path(pattern).parts[len(root.parts) :]
    if len(rest) <= 1:  # glob lists the fixed prefix only
        return ([root] if _unlisted(root) else []), []
    deep = rest.index("**") if recursive and "**" in rest else len(rest)
    inputs: list[Path] = []
    crossed: list[Path] = []

    def report(e: OSError) -> None:
        if e.filename is not None and os.path.isdir(e.filename):
            folder = Path(str(e.filename))
            depth = len(folder.relative_to(root).parts)
            (inputs if depth == 0 or depth >= deep else crossed).append(folder)

    for dirpath, dirnames, _ in _folders(root, report):
        rel = Path(dirpath).relative_to(root).parts
        dirnames[:] = [d for d in dirnames if _lists((*rel, d), rest, recursive)]
    return inputs, crossed


def discover(
    paths: list[str], recursive: bool = False, warnings: list[str] | None = None
) -> list[tuple[Path, Path]]:
    """(image, root) pairs, in a stable order, without duplicates.

    A path that names a file is taken whatever its extension (so a bad file gets its own
    error row); folders contribute files with image extensions; anything else is tried as
    a glob pattern. A path that matches nothing, or paths that yield no image at all (an
    empty folder, a folder of sub-folders without ``recursive``), are a usage error; so is
    a folder named on the command line that cannot be listed. A folder found (below a
    folder with ``recursive``, or by a pattern) that cannot be listed is one input: it gets
    an error row (``pair``), and the batch goes on; one a pattern's intermediate wildcard
    only passed through (``_unsearched``) is said in ``warnings`` instead.
    """
    out: list[tuple[Path, Path]] = []
    seen: set[Path] = set()

    def add(p: Path, root: Path) -> None:
        key = Path(os.path.abspath(p))
        if key not in seen:
            seen.add(key)
            out.append((p, root))

    for raw in paths:
        p = Path(raw)
        if _is_dir(p):
            for f in _walk(p, recursive):
                add(f, p)
        elif _present(p):
            add(p, p.parent)
        else:
            matches = sorted(glob.glob(raw, recursive=recursive))
            unsearched, crossed = _unsearched(raw, recursive)
            skipped = ""
            if crossed:
                more = f" and {len(crossed) - 1} more" if len(crossed) > 1 else ""
                skipped = (
                    f"{raw}: cannot list {display_path(crossed[0])}{more} "
                    "(permissions?); the images the pattern would find there are skipped"
                )
            if not matches and not unsearched:
                raise ConfigError(skipped or f"{raw}: no such file, folder or matching pattern")
            if skipped and warnings is not None:
                warnings.append(skipped)
            # relative paths (for --ref pairing) start below the pattern's fixed prefix
            root = _fixed_prefix(raw)
            for m in matches:
                mp = Path(m)
                if _is_dir(mp) and not _unlisted(mp):
                    for f in _walk(mp, recursive):
                        add(f, mp)
                else:
                    add(mp, root)
            for folder in unsearched:
                add(folder, root)
    if not out:
        where = ", ".join(paths)
        hint = (
            "; sub-folders are searched only with -R (--recursive)"
            if not recursive
            else f"; images are files named {', '.join(sorted(IMAGE_EXTENSIONS)[:4])}, …"
        )
        raise ConfigError(f"no images found in {where}{hint}")
    return out


def pair(found: list[tuple[Path, Path]], ref: str | None) -> list[Job]:
    """Attach references: one file for all, or a folder matched by relative path, then by name,
    then by stem (so ``a.png`` can pair with ``a.bmp``). No match gives the job an error."""
    if ref is None:
        return [Job(image=img, root=root, error=_unlisted(img)) for img, root in found]
    r = Path(ref)
    if r.is_file():
        return [Job(image=img, root=root, reference=r) for img, root in found]
    if not r.is_dir():
        raise ConfigError(f"--ref {ref}: {missing(r)}")
    by_name: dict[str, list[Path]] = {}
    by_stem: dict[str, list[Path]] = {}
    for f in _walk(r, recursive=True):
        if f.is_dir():
            continue  # a folder that cannot be listed holds no reference we can use
        by_name.setdefault(f.name, []).append(f)
        by_stem.setdefault(f.stem, []).append(f)
    jobs = []
    for img, root in found:
        if why := _unlisted(img):
            jobs.append(Job(image=img, root=root, error=why))
            continue
        try:
            rel = img.relative_to(root)
        except ValueError:
            rel = Path(img.name)
        cand = r / rel
        if cand.is_file():
            jobs.append(Job(image=img, root=root, reference=cand))
            continue
        # no file at the same relative path: a unique match by name, then by stem
        matches = by_name.get(img.name) or by_stem.get(img.stem) or []
        if len(matches) == 1:
            jobs.append(Job(image=img, root=root, reference=matches[0]))
            continue
        why = (
            f"no reference for {display_path(rel)} in {ref}"
            if not matches
            else f"ambiguous reference for {display_path(rel)}: {len(matches)} files in {ref} "
            f"match (e.g. {display_path(matches[0])}, {display_path(matches[1])})"
        )
        jobs.append(Job(image=img, root=root, error=why))
    return jobs
