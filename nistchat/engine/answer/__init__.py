"""Stage 5, the answer: the refusal gate, small talk, the prompt, the reader's stream, the checks
and the retry, as a stream of typed events (events.py)."""
from .events import EVENT_TYPES, Checked, Error, Event, Final, Prefill, Queue, Retry, Sources, Token
from .pipeline import (COPY_RETRY, DECLINED_RETRY, DENIED_RETRY, LIST_RETRY, POLAR_RETRY, PREMISE_RETRY, Pipeline,
                       question_problem)

__all__ = ["COPY_RETRY", "DECLINED_RETRY", "DENIED_RETRY", "EVENT_TYPES", "LIST_RETRY", "POLAR_RETRY", "PREMISE_RETRY",
           "Checked", "Error", "Event", "Final", "Pipeline", "Prefill", "Queue", "Retry",
           "Sources", "Token", "question_problem"]
