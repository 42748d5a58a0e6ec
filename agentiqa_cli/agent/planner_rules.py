"""The ``rules`` backend's planner: query keywords → plan, following AgenticIQA App. A.2.

No model is involved, so everything here is a heuristic over the query's words:
distortion words map onto the seven categories, aesthetic words make a query "Other",
determiner + words noun phrases name the objects, and tool names are matched with their
common spellings ("MS-SSIM", "ms ssim" → ``ms_ssim``; "TOPIQ" → the FR or NR variant that
fits the reference mode).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agentiqa_cli.categories import query_regexes
from agentiqa_cli.records import MAX_SCOPES, Category, Plan, PlanSwitches

# the words that name each category, from its facts (agentiqa_cli/categories.py)
_DISTORTION_RES = query_regexes()

# High-level, non-technical properties: the A.2 "Other" query type.
_OTHER_RE = re.compile(
    r"\b(?:aesthetic\w*|emotion\w*|mood\w*|feel(?:s|ing|ings)?|styl\w*|artistic\w*|art"
    r"|beaut\w*|pretty|appeal\w*|attractive\w*|composition\w*|composed|framing"
    r"|creativ\w*|pleasing|pleasant|harmon\w*|vibe\w*|atmospher\w*|sentiment\w*)\b"
)
# Colour as part of a composition is aesthetic, not a colour distortion.
_AESTHETIC_COLOUR_RE = re.compile(r"\bcolou?r (?:composition|harmony|palette|scheme)s?\b")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_DETERMINERS = _words("the this that these those a an its his her their my our your")
# Words that end a noun phrase: verbs, prepositions, conjunctions, pronouns, question
# words, adverbs, and adjectives that usually follow the noun they describe.
_STOP = _words(
    """
    is are was were be been being am do does did done have has had having can could will
    would should shall may might must look looks looked looking appear appears appeared
    seem seems seemed get gets got make makes made show shows shown use using used rate
    rated judge assess evaluate compare describe tell give affect affected affects
    in on of at with for to from by about under over behind near into onto across
    through between among around within without against than as like after before
    and or but nor so yet if then because while whereas
    it i you he she we they me him us them what which who whom whose where when why how
    there here not no any some all each every both either neither much many more most
    less least very too quite rather really so well enough overall generally properly
    clearly sufficiently fully still also just only even out up down off washed
    according compared relative regarding versus vs
    readable legible visible noticeable clear good bad poor fine okay ok acceptable high
    low adequate sufficient correct accurate natural realistic present degraded distorted
    apparent evident obvious strong weak
    """
)
# Heads that mean "the whole image", a quantity, or the question itself, not an object.
_GENERIC = _words(
    """
    image images photo photos photograph photographs picture pictures pic pics shot shots
    frame frames scene view quality qualities level levels amount degree way kind type
    types thing things one ones option options answer answers question following
    camera lens version reference original distorted distortion distortions issue issues
    problem problems aspect aspects score scores rating ratings metric metrics tool tools
    value values whole entirety rest lot bit same other first second best worst main
    overall general visual perceived perceptual technical balance effect effects two three
    tone tones look portrait portraits selfie snapshot
    """
)
# Heads too vague to name a region on their own ("the areas", but "the dark corners").
_VAGUE = _words("area areas region regions part parts portion portions side sides")
# Object/region words recognised without a determiner ("Is background noise visible?").
_BARE_OBJECTS = _words("background foreground sky subject face faces text person people skin eyes")
_COLOUR_ADJECTIVES = _words(
    "red orange yellow green blue purple violet pink brown black white grey gray golden"
)
# How much of a distortion: "a slight blur", "heavy noise" name no object.
_DEGREE = _words(
    "slight mild light faint subtle little some strong heavy severe extreme visible noticeable"
    " obvious magenta cyan warm cool"
)
_MAX_SCOPE_CHARS = 40

# Tool names that are also ordinary words count only when written in capitals.
_WORDLIKE_TOOLS = _words("mad entropy vif contrast noise blur sharpness exposure")


def _normalize(query: str) -> str:
    q = query.lower().replace("’", "'")
    q = _AESTHETIC_COLOUR_RE.sub(" aesthetic ", q)
    return re.sub(r"[-_/]", " ", q)


def _distortions(text: str) -> list[Category]:
    found: list[tuple[int, Category]] = []
    for cat, rx in _DISTORTION_RES:
        m = rx.search(text)
        if m:
            found.append((m.start(), cat))
    return list(dict.fromkeys(cat for _, cat in sorted(found)))


def _is_distortion_word(word: str) -> bool:
    return any(rx.fullmatch(word) for _, rx in _DISTORTION_RES)


def _is_content(word: str) -> bool:
    return word.isalpha() or (word.endswith("'s") and word[:-2].isalpha())


def _phrase(det: str | None, words: list[str]) -> str | None:
    """A scope name from the words after a determiner, or None if they name no object."""
    head = list(words)
    while head and _is_distortion_word(head[-1]):
        head.pop()
    if head != words and all(w in _COLOUR_ADJECTIVES or w in _DEGREE for w in head):
        return None  # "a blue cast", "a slight motion blur": the distortion, not an object
    # the attribute asked about is not part of the object's name ("the noisy sky")
    kept = [w for w in words if not _is_distortion_word(w) and not _OTHER_RE.fullmatch(w)]
    if not kept or kept[-1] in _GENERIC or (len(kept) == 1 and kept[0] in _VAGUE):
        return None
    if any(w.endswith("'s") and w[:-2] in _GENERIC for w in kept):
        return None
    name = " ".join(([det] if det else []) + kept)
    while len(name) > _MAX_SCOPE_CHARS and len(kept) > 1:
        kept = kept[1:]
        name = " ".join(([det] if det else []) + kept)
    return name[:_MAX_SCOPE_CHARS]


def _scopes(text: str, tool_words: set[str]) -> list[str]:
    tokens = re.findall(r"[a-z]+(?:'s)?|[0-9]+|[^\sa-z0-9]", text)
    scopes: list[str] = []
    used: set[int] = set()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        possessive_generic = tok.endswith("'s") and tok[:-2] in _GENERIC
        colour_start = tok in _COLOUR_ADJECTIVES and i + 1 < len(tokens)
        if tok in _DETERMINERS or possessive_generic or colour_start:
            # "the image's background" names the background; a colour opens "purple flowers"
            det = tok if tok in _DETERMINERS else None
            j = i if colour_start and det is None and not possessive_generic else i + 1
            words: list[str] = []
            while j < len(tokens) and _is_content(tokens[j]) and tokens[j] not in _STOP:
                if tokens[j] in _DETERMINERS or tokens[j] in tool_words:
                    break
                if tokens[j].endswith("'s") and tokens[j][:-2] in _GENERIC:
                    break  # "the image's sky": restart at the possessive
                words.append(tokens[j])
                j += 1
            name = _phrase(det, words)
            if name and (det or possessive_generic or len(words) > 1):
                scopes.append(name)
                used.update(range(i, j))
            i = max(j, i + 1)
            continue
        if tok in _BARE_OBJECTS and i not in used:
            scopes.append(tok)
        i += 1
    return list(dict.fromkeys(scopes))[:MAX_SCOPES]


def _compact(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def _tools(
    query: str, tool_names: Iterable[str], has_reference: bool
) -> tuple[list[str], set[str]]:
    """Tools the query names, and the lowercase words that named them."""
    names = list(dict.fromkeys(tool_names))
    by_compact = {_compact(n): n for n in names}
    # "TOPIQ" names the family topiq_fr/topiq_nr: the variant that fits the mode wins.
    families: dict[str, list[str]] = {}
    for n in names:
        m = re.fullmatch(r"(.+)[_-](fr|nr)", n.lower())
        if m:
            families.setdefault(_compact(m.group(1)), []).append(n)
    raw_tokens = re.findall(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*", query)
    found: list[str] = []
    words: set[str] = set()
    i = 0
    while i < len(raw_tokens):
        for size in (3, 2, 1):  # longest first: "ms ssim" before "ssim"
            span = raw_tokens[i : i + size]
            if len(span) < size:
                continue
            key = _compact("".join(span))
            tool = by_compact.get(key) or _family_pick(families.get(key), has_reference)
            if tool is None:
                continue
            # lowercase everyday words ("blur effect", "contrast") name a property, not a tool
            plain = all(s.isalpha() and s.islower() for s in span)
            if plain and (size > 1 or key in _WORDLIKE_TOOLS or _is_distortion_word(key)):
                continue
            found.append(tool)
            words.update(w.lower() for s in span for w in re.split(r"[-_]", s))
            i += size
            break
        else:
            i += 1
    return list(dict.fromkeys(found)), words


def _family_pick(members: list[str] | None, has_reference: bool) -> str | None:
    if not members:
        return None
    want = "fr" if has_reference else "nr"
    for n in members:
        if n.lower().endswith(want):
            return n
    return members[0]


def plan_query(query: str, has_reference: bool, tool_names: Iterable[str]) -> Plan:
    """The A.2 plan for ``query``, built from its words alone."""
    text = _normalize(query)
    required, tool_words = _tools(query, tool_names, has_reference)
    categories = _distortions(text)
    is_other = bool(_OTHER_RE.search(text)) and not categories and not required
    scopes = _scopes(text, tool_words)

    explicit = bool(categories) and not is_other
    keys = scopes or ["Global"]
    distortions = {k: list(categories) for k in keys} if explicit else None

    if is_other:
        switches = PlanSwitches(
            distortion_detection=False,
            distortion_analysis=False,
            tool_selection=False,
            tool_execute=False,
        )
    else:
        region, tool = bool(scopes), bool(required)
        switches = PlanSwitches(
            distortion_detection=not explicit,
            distortion_analysis=True,
            tool_selection=not region and not tool,
            tool_execute=tool or not region,
        )
    return Plan(
        query_type="Other" if is_other else "IQA",
        query_scope=scopes or "Global",
        distortion_source="explicit" if explicit else "inferred",
        distortions=distortions,
        reference_mode="Full-Reference" if has_reference else "No-Reference",
        required_tools=required or None,
        plan=switches,
    )
