"""The questions editor's form model: the whole config travels in the form (fields named
`c{i}.name`, `c{i}.q{j}.label`, ...), htmx posts it with an operation, and the server returns the
re-rendered editor. Nothing is saved until "Save"; the browser needs no editor JavaScript."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..web import clean_text
from ..topics.questions import MODES, Topic, entry_to_topic, topic_to_entry

_FIELD = re.compile(r"^c(\d+)\.(name|emoji|intro)$|^c(\d+)\.q(\d+)\.(label|mode|text)$")


@dataclass
class Category:
    name: str = ""
    emoji: str = ""
    intro: str = ""
    questions: list[Topic] = field(default_factory=list)


@dataclass
class Draft:
    intro: str = ""
    categories: list[Category] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: dict) -> "Draft":
        return cls(intro=config.get("intro", ""), categories=[
            Category(c.get("name", ""), c.get("emoji", ""), c.get("intro", ""),
                     [entry_to_topic(e) for e in c.get("questions", [])]) for c in config.get("categories", [])])

    @classmethod
    def from_form(cls, form) -> "Draft":
        cats: dict[int, dict] = {}
        for key, value in form.items():
            value = clean_text(value)
            m = _FIELD.match(key)
            if not m:
                continue
            if m.group(1) is not None:
                cats.setdefault(int(m.group(1)), {"q": {}})[m.group(2)] = value
            else:
                cat = cats.setdefault(int(m.group(3)), {"q": {}})
                cat["q"].setdefault(int(m.group(4)), {})[m.group(5)] = value
        draft = cls(intro=clean_text(form.get("intro", "")))
        for i in sorted(cats):
            c = cats[i]
            questions = []
            for j in sorted(c["q"]):
                q = c["q"][j]
                mode = q.get("mode") if q.get("mode") in MODES else "plain"
                text = q.get("text", "")
                questions.append(Topic(label=q.get("label", ""), mode=mode,
                                       prompt=text if mode == "prompt" else None,
                                       answer=text if mode == "answer" else None))
            draft.categories.append(Category(c.get("name", ""), c.get("emoji", ""), c.get("intro", ""), questions))
        return draft

    def to_config(self) -> dict:
        config: dict = {}
        if self.intro.strip():
            config["intro"] = self.intro.strip()
        config["categories"] = []
        for cat in self.categories:
            item = {"name": cat.name.strip(), "emoji": cat.emoji.strip()}
            if cat.intro.strip():
                item["intro"] = cat.intro.strip()
            item["questions"] = [topic_to_entry(Topic(q.label.strip(), q.mode,
                                                      (q.prompt or "").strip() or None,
                                                      (q.answer or "").strip() or None))
                                 for q in cat.questions]
            config["categories"].append(item)
        return config

    def apply(self, op: str) -> None:
        """add_cat · del_cat:i · up_cat:i · down_cat:i · add_q:i · del_q:i:j · up_q:i:j · down_q:i:j
        (mode switches need no op: the select's value is re-read with the form)."""
        name, *args = op.split(":")
        try:
            idx = [int(a) for a in args]
        except ValueError:
            return
        cats = self.categories
        if name == "add_cat":
            cats.append(Category(name="New category", emoji="📄"))
        elif name in ("del_cat", "up_cat", "down_cat") and idx and 0 <= idx[0] < len(cats):
            i = idx[0]
            if name == "del_cat":
                del cats[i]
            else:
                _move(cats, i, -1 if name == "up_cat" else 1)
        elif name == "add_q" and idx and 0 <= idx[0] < len(cats):
            cats[idx[0]].questions.append(Topic(label="", mode="plain"))
        elif name in ("del_q", "up_q", "down_q") and len(idx) == 2 and 0 <= idx[0] < len(cats) \
                and 0 <= idx[1] < len(cats[idx[0]].questions):
            questions = cats[idx[0]].questions
            if name == "del_q":
                del questions[idx[1]]
            else:
                _move(questions, idx[1], -1 if name == "up_q" else 1)


def _move(items: list, i: int, step: int) -> None:
    j = i + step
    if 0 <= j < len(items):
        items[i], items[j] = items[j], items[i]


def error_paths(errors: list[str]) -> set[str]:
    """'categories[1].questions[0].label: is required' -> {'c1.q0.label', 'c1.q0', 'c1'} for field marks."""
    paths: set[str] = set()
    for err in errors:
        m = re.match(r"categories\[(\d+)\](?:\.questions\[(\d+)\])?(?:\.(\w+))?", err)
        if not m:
            continue
        cat, q, leaf = m.groups()
        paths.add(f"c{cat}")
        if q is not None:
            paths.add(f"c{cat}.q{q}")
            if leaf:
                paths.add(f"c{cat}.q{q}.{leaf}")
        elif leaf:
            paths.add(f"c{cat}.{leaf}")
    return paths
