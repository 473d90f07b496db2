"""How well the small-talk classifier separates small talk from NIST questions, on a labelled split
and on the answerable questions of the evaluation sets (`nistchat eval smalltalk`).

The number that matters most is the false positives: an answerable NIST question taken for small
talk gets a greeting instead of an answer. Thresholds are chosen on dev (the labelled dev split
with the dev and dev2 questions), and the held-out split (with the test questions) only reports.
"""
from __future__ import annotations

import functools
import itertools
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..answer.smalltalk import NIST, Example, SmallTalkClassifier, load_examples

SPLIT_FILES = {"dev": ("smalltalk_dev.jsonl", ("golden.jsonl", "dev_office.jsonl")),
               "test": ("smalltalk_test.jsonl", ("test.jsonl",))}


@dataclass
class Split:
    """One split: labelled messages, and the answerable questions of its evaluation sets."""
    name: str
    labelled: list[Example]
    questions: list[str]


@dataclass
class Report:
    split: str
    min_score: float
    margin: float
    small_talk: int = 0  # labelled small-talk messages
    caught: int = 0  # ... taken for small talk
    right_kind: int = 0  # ... of the right kind
    nist_labelled: int = 0  # labelled NIST messages (follow-ups, greetings with a question)
    nist_labelled_fp: int = 0  # ... taken for small talk
    questions: int = 0  # answerable evaluation questions
    questions_fp: int = 0  # ... taken for small talk
    misses: list[str] = field(default_factory=list)  # what went wrong, for a person to read

    @property
    def recall(self) -> float:
        return self.caught / self.small_talk if self.small_talk else 0.0

    @property
    def precision(self) -> float:
        taken = self.caught + self.nist_labelled_fp + self.questions_fp
        return self.caught / taken if taken else 1.0

    @property
    def fp_rate(self) -> float:
        """Answerable evaluation questions taken for small talk."""
        return self.questions_fp / self.questions if self.questions else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "recall": round(self.recall, 3), "precision": round(self.precision, 3),
                "fp_rate": round(self.fp_rate, 4)}


def load_split(name: str, eval_dir: Path) -> Split:
    labelled_file, question_files = SPLIT_FILES[name]
    questions = []
    for file in question_files:
        path = eval_dir / file
        if path.is_file():
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            questions += [r["question"] for r in rows if r.get("category") != "negative"]
    return Split(name, load_examples(eval_dir / labelled_file), questions)


def measure(classifier: SmallTalkClassifier, split: Split, scores=None) -> Report:
    """`scores`: as `SmallTalkClassifier.classify` takes it."""
    report = Report(split.name, classifier.min_score, classifier.margin)
    for example in split.labelled:
        decision = classifier.classify(example.text, scores)
        if example.label == NIST:
            report.nist_labelled += 1
            if decision.small_talk:
                report.nist_labelled_fp += 1
                report.misses.append(f"NIST message taken for {decision.kind}: {example.text!r}")
        else:
            report.small_talk += 1
            report.caught += decision.small_talk
            if decision.small_talk and decision.kind == example.label:
                report.right_kind += 1
            elif decision.small_talk:
                report.misses.append(f"{example.label} taken for {decision.kind}: {example.text!r}")
            else:
                report.misses.append(f"{example.label} not caught ({decision.why}): {example.text!r}")
    for question in split.questions:
        report.questions += 1
        decision = classifier.classify(question, scores)
        if decision.small_talk:
            report.questions_fp += 1
            report.misses.append(f"evaluation question taken for {decision.kind}")  # never printed verbatim
    return report


def sweep(classifier: SmallTalkClassifier, split: Split, min_scores, margins) -> list[Report]:
    """Every (min_score, margin) pair on one split, best first: fewest false positives, then most caught."""
    reports, scores = [], functools.lru_cache(maxsize=None)(classifier.scores)  # each text embedded once
    for min_score, margin in itertools.product(min_scores, margins):
        classifier.min_score, classifier.margin = min_score, margin
        reports.append(measure(classifier, split, scores))
    reports.sort(key=lambda r: (r.questions_fp + r.nist_labelled_fp, -r.caught, -r.min_score))
    return reports
