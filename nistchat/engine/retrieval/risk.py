"""Risk classes for questions: a small table of regex patterns, overridable from settings.

HIGH questions are the ones a small reader most often gets subtly wrong (picking the one item that
fits, enumerating every item, quoting a definition, applying a rule to a scenario), so their
answers are verified sentence by sentence. LIST questions are HIGH and also carry a disclaimer,
because a reader can silently drop items.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUM = r"(?:\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"

# (kind, regex, is_list). Matched case-insensitively against the question; first match of each kind counts.
DEFAULT_PATTERNS: list[tuple[str, str, bool]] = [
    ("list", rf"\bwhat are the {_NUM}\b", True),
    ("list", r"(?:^|[.?!]\s+)(?:please\s+)?list\b|\blist (?:the|all|every|each)\b", True),
    ("list", rf"\bname (?:the |all )?{_NUM}\b|\bname (?:all|every|each)\b", True),
    ("list", rf"\b(?:which|what) {_NUM} [a-z]", True),
    ("list", r"\benumerate\b|\bwhat are all (?:the )?\b", True),
    ("selection", r"\bwhich\b.{0,80}\b(?:describes?|answers?|appl(?:y|ies)|corresponds?|maps?|addresses|covers?|"
                  r"fits?|concerns?|calls? for)\b", False),
    ("selection", r"\bwhich (?:[\w-]+ ){0,2}(?:category|categories|function|subcategory|practice|task|action|"
                  r"principle|characteristics?)\b", False),
    ("enumeration", rf"\bwhat are the (?:{_NUM} )?\w+", False),
    ("enumeration", r"\bwhat (?:kinds|types|categories) of\b|\bhow many\b", False),
    ("definition", r"\bhow (?:does|do|is|are) .{1,60}\bdefined?\b|\bdefined as\b|\bwhat is .{1,80}\bdefined\b|"
                   r"\bdefinition of\b|\bwhat does .{1,60}\b(?:mean|stand for)\b", False),
    ("scenario", r"\b(?:when|if) (?:a|an|the|my) (?:user|customer|client|employee|practitioner|developer|deployer)"
                 r" (?:asks|requests|wants|needs)\b", False),
]


@dataclass
class Risk:
    level: str  # "HIGH" | "LOW"
    kinds: list[str] = field(default_factory=list)  # which pattern kinds matched
    is_list: bool = False

    def to_dict(self) -> dict:
        return {"level": self.level, "kinds": list(self.kinds), "is_list": self.is_list}


@dataclass
class RiskTable:
    patterns: list[tuple[str, re.Pattern, bool]]

    @classmethod
    def from_rows(cls, rows) -> "RiskTable":
        """Rows are (kind, regex, is_list) tuples or {"kind", "pattern", "list"} dicts (config form)."""
        compiled = []
        for row in rows:
            if isinstance(row, dict):
                kind, pattern, is_list = row["kind"], row["pattern"], bool(row.get("list", False))
            else:
                kind, pattern, is_list = row
            compiled.append((kind, re.compile(pattern, re.IGNORECASE), is_list))
        return cls(compiled)

    @classmethod
    def from_settings(cls, settings) -> "RiskTable":
        """`[risk] patterns` replaces the table; `patterns_extra` adds to it."""
        return cls.from_rows(list(settings.risk.patterns or DEFAULT_PATTERNS) + list(settings.risk.patterns_extra))

    def classify(self, question: str) -> Risk:
        text = " ".join((question or "").split())
        kinds, is_list = [], False
        for kind, regex, list_flag in self.patterns:
            if regex.search(text):
                if kind not in kinds:
                    kinds.append(kind)
                is_list = is_list or list_flag
        return Risk("HIGH" if kinds else "LOW", kinds, is_list)


_DEFAULT = RiskTable.from_rows(DEFAULT_PATTERNS)


def classify(question: str, settings=None) -> Risk:
    table = RiskTable.from_settings(settings) if settings is not None else _DEFAULT
    return table.classify(question)
