"""Stage 6, evaluation: retrieval and answer runs over the dev, dev2 and test sets, the
conversation and small-talk sets, reports and comparisons, and the ablation rules."""
from .ablation import RULES, rule_off
from .answers import run_answers, subset
from .conversation_answers import run_conversation_answers
from .conversations import format_table as format_conversations, load_conversations, run_conversations
from .conversations import resolve_sets as resolve_conversation_sets
from .languages import LISTS as LANGUAGE_LISTS, answer_between, format_languages, run_languages
from .report import STAGES, compare, config_snapshot, format_compare, headline, judges_of
from .retrieval import (MODES, SET_FILES, SET_SPECS, ablate, evaluate, format_ablation, format_sets, load_golden,
                        match_norm, resolve_sets)
from .smalltalk import load_split as load_smalltalk_split, measure as measure_smalltalk, sweep as sweep_smalltalk

__all__ = ["LANGUAGE_LISTS", "MODES", "RULES", "SET_FILES", "SET_SPECS", "STAGES", "ablate", "answer_between",
           "compare", "config_snapshot", "evaluate",
           "format_ablation", "format_compare", "format_conversations", "format_languages", "format_sets", "headline",
           "judges_of",
           "load_conversations", "load_golden", "match_norm", "resolve_conversation_sets", "resolve_sets", "rule_off",
           "load_smalltalk_split", "measure_smalltalk", "run_answers", "run_conversation_answers", "run_conversations",
           "run_languages", "subset",
           "sweep_smalltalk"]
