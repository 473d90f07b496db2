"""`nistchat eval ...`: evaluation runs on the dev and test sets, stored in SQLite (the admin page
`/evals` shows them) and compared. Subcommands may live in other modules and be added to
`eval_group` with `eval_group.add_command(...)`."""
from __future__ import annotations

import contextlib
import io
import json
import sys
import tomllib
from pathlib import Path

import click

from ..config import GGUF_MODELS, ConfigError
from .common import cli_runtime, friendly_errors, print_json

SET_HELP = ("dev (data/eval/golden.jsonl), dev2 (data/eval/dev_office.jsonl; both tuned on), test (data/eval/test.jsonl, "
            "held out), all (the three), both (dev and test), reported (items admins made from 👎 answers), or a JSONL file.")


@click.group("eval")
def eval_group() -> None:
    """Evaluate retrieval and answers on the dev/test sets; runs are stored and compared."""


def parse_overrides(pairs: tuple[str, ...]) -> dict:
    """KEY=VALUE (dotted keys, TOML values: answer.k=4, verify.mode="always") -> nested tables."""
    out: dict = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r}: expected KEY=VALUE, e.g. answer.k=4", param_hint="--setting")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node = out
        *parents, leaf = key.strip().split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def run_runtime(changes: dict):
    runtime = cli_runtime()
    if not changes:
        return runtime
    try:
        return runtime.derived(changes)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def store_app(runtime):
    """The web app's database (instance/nistchat.sqlite3), migrated, for storing and reading runs."""
    from ..app import create_app, upgrade_database

    app = create_app({"SETTINGS": runtime.settings, "RUNTIME": runtime})
    log = io.StringIO()
    try:
        with contextlib.redirect_stderr(log):  # Alembic's INFO lines would bury the report
            upgrade_database(app)
    except Exception:
        sys.stderr.write(log.getvalue())
        raise
    return app


def _start(runtime, kind, spec, **options):
    from ..evals.store import create_run

    try:
        return create_run(runtime, kind, spec, **options)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def _finish(run) -> None:
    from ..evals.store import headline_line

    if run.status != "done":
        raise click.ClickException(f"run {run.id} failed: {run.note}")
    for note in (run.metrics or {}).get("notes", []):
        click.echo(f"note: {note}")
    click.echo(f"stored as run {run.id} ({run.kind}, sets {run.sets}): `nistchat eval runs`, /evals/{run.id}")
    for name, line in headline_line(run).items():
        click.echo(f"  {name}: {line}")


common_options = [
    click.option("--set", "spec", default="all", show_default=True, help=SET_HELP),
    click.option("--setting", "-o", "overrides", multiple=True, metavar="KEY=VALUE",
                 help="Change a setting for this run (repeatable), e.g. -o answer.k=4."),
    click.option("--note", default="", help="A note stored with the run."),
]


def with_common(f):
    for option in reversed(common_options):
        f = option(f)
    return f


@eval_group.command("retrieval")
@click.option("--k", default=6, show_default=True, type=click.IntRange(1, 50), help="Passages per question.")
@click.option("--golden", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A JSONL set (same as --set FILE).")
@click.option("--mode", "modes", multiple=True, type=click.Choice(["hybrid", "dense", "bm25"]),
              help="Only these modes (default: all three, side by side).")
@click.option("--limit", type=click.IntRange(1), help="Only this many questions per set (categories mixed).")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as one JSON object.")
@click.option("--no-store", is_flag=True, help="Print only; do not store the run.")
@click.option("--ablate", is_flag=True, help="Hybrid hit@k per set with each named rule turned off (not stored).")
@with_common
def retrieval(k, golden, modes, limit, as_json, no_store, ablate, spec, overrides, note) -> None:
    """Evidence-hit@k, MRR, per category and latency for hybrid, dense-only and BM25-only; dev and
    test side by side. Stored as a run unless --no-store."""
    from ..engine.evaluation import MODES, format_sets
    from ..evals.store import execute

    runtime = run_runtime(parse_overrides(overrides))
    spec = str(golden) if golden else spec
    if ablate:
        return _ablate(runtime, spec, k, as_json)
    modes = modes or MODES
    with friendly_errors():
        runtime.index  # noqa: B018 - a missing index is one clear line, before anything is stored
        app = store_app(runtime)
        with app.app_context():
            run = _start(runtime, "retrieval", spec, limit=limit, note=note, k=k, modes=modes)
            reports: dict = {}
            run = execute(runtime, run.id, spec=spec, limit=limit, k=k, modes=modes, reports=reports)
            if no_store:
                from ..extensions import db
                db.session.delete(run)
                db.session.commit()
            if run.status != "done":
                raise click.ClickException(f"run {run.id} failed: {run.note}")
            notes = (run.metrics or {}).get("notes", [])
            sets = json.loads(json.dumps(run.config.get("sets", {})))
            run_id = None if no_store else run.id
    if as_json:
        first = next(iter(reports.values()))
        out = {**{key: v for key, v in first.items() if key != "items"}, "golden": next(iter(sets.values())),
               "sets": {n: {key: v for key, v in r.items() if key != "items"} for n, r in reports.items()},
               "notes": notes, "run": run_id}
        print_json(out)
        return
    for n in notes:
        click.echo(f"note: {n}")
    for name, path in sets.items():
        rep = reports[name]
        click.echo(f"{name} set: {path}  ({rep['n_questions']} questions, {rep['n_answerable']} answerable)")
    click.echo(format_sets(reports if len(reports) > 1 else {"": next(iter(reports.values()))}))
    if run_id:
        click.echo(f"\nstored as run {run_id}")


@eval_group.command("conversations")
@click.option("--set", "spec", default="both", show_default=True,
              help="dev or dev2 (data/eval/conversations_dev.jsonl, conversations_dev2.jsonl: decide here), test "
                   "or test2 (held out), both (dev and test), all (the four), or a JSONL file of conversations.")
@click.option("--k", default=6, show_default=True, type=click.IntRange(1, 50), help="Passages per turn.")
@click.option("--setting", "-o", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Change a setting for this run (repeatable), e.g. -o retrieval.scope_named_docs=false.")
@click.option("--json", "as_json", is_flag=True, help="Print the summaries (and misses) as one JSON object.")
@click.option("--no-store", is_flag=True, help="Print only; do not store the run.")
@click.option("--note", default="", help="A note stored with the run.")
@click.option("--answers", is_flag=True,
              help="Answer every turn with the reader, the real earlier answers as the history: adds the key-term "
                   "share and the refusals (minutes per conversation on a CPU).")
@click.option("--limit", type=click.IntRange(1), help="Only the first N conversations of each set.")
@click.option("--languages", is_flag=True, help="Only the other-language turns, each as written and in English, "
                                                "per ranked list, with each split's translated questions "
                                                "(languages_dev.jsonl, languages_test.jsonl, ...; not stored).")
@click.option("--list", "lists", multiple=True, type=click.Choice(["dense", "bm25", "dense2", "hybrid"]),
              help="With --languages: only these ranked lists (repeatable; default all; the hybrid always).")
def conversations(spec, k, overrides, as_json, no_store, note, answers, limit, languages, lists) -> None:
    """Retrieval turn by turn through each conversation, with the history the chat would pass (the
    earlier questions, and each earlier turn's expected answer standing in for the real one):
    evidence-hit@k for first turns against follow-ups and per kind of turn, dev and test side by side.
    With --answers, each turn is answered and the real answers are the history."""
    from ..engine.evaluation import (format_conversations as format_table, load_conversations,
                                     resolve_conversation_sets as resolve_sets, run_conversation_answers,
                                     run_conversations)
    from ..evals.store import eval_dirs, store_conversations

    runtime = run_runtime(parse_overrides(overrides))
    try:
        paths = resolve_sets(spec, eval_dirs(runtime.settings), languages=languages)
        sets = {name: load_conversations(path)[:limit] for name, path in paths.items()}
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    with friendly_errors():
        runtime.index  # noqa: B018 - a missing index is one clear line, before anything runs
        pipeline = runtime.pipeline
        if languages:
            _languages(runtime, pipeline, sets, paths, k, as_json, tuple(lists))
            return
        if answers:
            _as_served(runtime)
            progress = lambda r: click.echo(f"  {r.id} [{r.kind}] hit={int(r.hit)} terms={r.key_terms:.2f}"  # noqa: E731
                                            f"{' refused' if r.refused else ''}", err=True)
            reports = {name: run_conversation_answers(runtime, convs, k=k, on_turn=progress)
                       for name, convs in sets.items()}
        else:
            reports = {name: run_conversations(runtime.retriever, convs, k=k,
                                               gate=lambda r: pipeline.refusal_gate(r).refuse)
                       for name, convs in sets.items()}
    run_id = None
    if not no_store:
        app = store_app(runtime)
        with app.app_context():
            run_id = store_conversations(runtime, reports, {n: str(p) for n, p in paths.items()}, note=note).id
    if as_json:
        print_json({"k": k, "sets": {n: str(p) for n, p in paths.items()}, "run": run_id,
                    "summaries": {n: r.summary() for n, r in reports.items()},
                    "misses": {n: [{"id": m.id, "kind": m.kind, "question": m.question, "searched_for": m.search_text,
                                    "missing": m.missing} for m in r.misses()] for n, r in reports.items()}})
        return
    for name, path in paths.items():
        click.echo(f"{name} set: {path}")
    click.echo(format_table(reports))
    if run_id:
        click.echo(f"\nstored as run {run_id} (conversations): `nistchat eval runs`, /evals/{run_id}")


def _as_served(runtime) -> None:
    """The self-test `serve` runs before its first answer: the reader's measured rate sets the
    translation's deadline and bounds each answer's wait for its first token, as in the chat."""
    runtime.models.self_test()


def _languages(runtime, pipeline, sets: dict, paths: dict, k: int, as_json: bool, lists: tuple[str, ...]) -> None:
    """`eval conversations --languages`: other-language turns against their English (evaluation/languages.py)."""
    from ..engine.evaluation import LANGUAGE_LISTS, answer_between, format_languages, run_languages

    _as_served(runtime)
    reports = {name: run_languages(runtime.retriever, convs, k=k, gate=lambda r: pipeline.refusal_gate(r).refuse,
                                   between=answer_between(runtime.models.reader),
                                   lists=(*lists, "hybrid") if lists else LANGUAGE_LISTS)
               for name, convs in sets.items()}
    if as_json:
        print_json({"k": k, "sets": {n: str(p) for n, p in paths.items()},
                    "summaries": {n: r.summary() for n, r in reports.items()},
                    "turns": {n: [{"id": t.id, "question": t.question, "english": t.english, "hit": t.hit,
                                   "hit_english": t.hit_english, "searched_for": t.searched, "refused": t.refused,
                                   "refused_english": t.refused_english, "negative": t.negative,
                                   "translation": t.translation}
                                  for t in r.turns] for n, r in reports.items()}})
        return
    for name, path in paths.items():
        click.echo(f"{name} set: {path}")
    click.echo(format_languages(reports))


def _ablate(runtime, spec: str, k: int, as_json: bool) -> None:
    from ..engine.evaluation import RULES, rule_off
    from ..engine.evaluation import ablate, format_ablation, load_golden, resolve_sets
    from ..evals.store import eval_dirs

    try:
        paths, notes = resolve_sets(spec, eval_dirs(runtime.settings))
        sets = {name: load_golden(path) for name, path in paths.items()}
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    with friendly_errors():
        table = ablate(runtime.retriever, sets, {name: rule_off(name)["retrieval"] for name in RULES}, k=k)
    if as_json:
        print_json({"k": k, "sets": {n: str(p) for n, p in paths.items()}, "ablation": table})
        return
    for n in notes:
        click.echo(f"note: {n}")
    click.echo(format_ablation(table, k))


@eval_group.command("answers")
@click.option("--limit", type=click.IntRange(1), help="Only this many questions per set (categories mixed).")
@click.option("--judge", "judge_n", default=3, show_default=True, type=click.IntRange(0),
              help="Judged scores for the first N answered questions per set (each is several model calls).")
@click.option("--reader", help="Reader for this run: qwen2.5-coder-0.5b / -1.5b, a .gguf path, or an Ollama model.")
@click.option("--k", type=click.IntRange(1, 50), help="Passages handed to the reader (answer.k).")
@with_common
def answers(limit, judge_n, reader, k, spec, overrides, note) -> None:
    """Answer each question with the real pipeline, score it (deterministic scores for all, judged
    for the first --judge), and store the run."""
    from ..evals.store import execute

    changes = parse_overrides(overrides)
    if reader:
        key = "gguf" if reader in GGUF_MODELS or reader.endswith(".gguf") else "reader_model"
        changes.setdefault("backends", {})[key] = reader
    if k:
        changes.setdefault("answer", {})["k"] = k
    runtime = run_runtime(changes)
    with friendly_errors():
        runtime.index  # noqa: B018
        app = store_app(runtime)
        with app.app_context():
            _as_served(runtime)
            run = _start(runtime, "answers", spec, limit=limit, judge_n=judge_n, note=note)
            click.echo(f"run {run.id}: {run.total} questions ({run.sets}), judged: first {judge_n} per set")
            run = execute(runtime, run.id, spec=spec, limit=limit, judge_n=judge_n)
            _finish(run)


@eval_group.command("runs")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run.")
@click.option("--last", default=20, show_default=True, type=click.IntRange(1), help="How many runs.")
def runs(as_json: bool, last: int) -> None:
    """Stored runs, newest first, with their headline metrics."""
    from ..evals.store import headline_line, mark_interrupted, run_dict
    from ..models import EvalRun

    app = store_app(cli_runtime())
    with app.app_context():
        mark_interrupted()
        rows = EvalRun.query.order_by(EvalRun.id.desc()).limit(last).all()
        for run in rows:
            if as_json:
                data = run_dict(run)
                data.pop("items")
                print_json(data)
                continue
            cfg = run.config or {}
            reader = (cfg.get("models") or {}).get("reader", "?")
            click.echo(f"#{run.id} {run.kind} {run.status} {run.started_at:%Y-%m-%d %H:%M} sets={run.sets} "
                       f"k={cfg.get('retrieval_k') or cfg.get('k')} reader={reader} git={cfg.get('git') or '?'}"
                       + (f"  ({run.note})" if run.note else ""))
            for name, line in headline_line(run).items():
                click.echo(f"    {name}: {line}")
        if not rows and not as_json:
            click.echo("No runs stored yet: `nistchat eval retrieval` or `nistchat eval answers`.")


@eval_group.command("compare")
@click.argument("a", type=int)
@click.argument("b", type=int)
@click.option("--mixed-judges", is_flag=True, help="Compare judged scores even when the judges differ (said).")
@click.option("--json", "as_json", is_flag=True, help="The comparison as one JSON object.")
def compare(a: int, b: int, mixed_judges: bool, as_json: bool) -> None:
    """Per-metric change from run A to run B (95 % interval, flips) and the questions that changed."""
    from ..engine.evaluation import compare as compare_runs, format_compare
    from ..evals.store import run_dict
    from ..extensions import db
    from ..models import EvalRun

    app = store_app(cli_runtime())
    with app.app_context():
        runs_ = [db.session.get(EvalRun, n) for n in (a, b)]
        missing = [n for n, r in zip((a, b), runs_) if r is None]
        if missing:
            raise click.ClickException(f"no run {missing[0]} (see `nistchat eval runs`)")
        try:
            result = compare_runs(run_dict(runs_[0]), run_dict(runs_[1]), mixed_judges=mixed_judges)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        print_json(result)
    else:
        click.echo(format_compare(result))


@eval_group.command("smalltalk")
@click.option("--set", "spec", type=click.Choice(["dev", "test", "both"]), default="both", show_default=True,
              help="dev: data/eval/smalltalk_dev.jsonl with the dev and dev2 questions (thresholds are chosen "
                   "here); test: the held-out split with the test questions.")
@click.option("--sweep", is_flag=True, help="Try a grid of thresholds on dev and list the best first.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per split.")
def smalltalk(spec: str, sweep: bool, as_json: bool) -> None:
    """How the small-talk classifier separates small talk from NIST questions (false positives first)."""
    from ..engine.evaluation import load_smalltalk_split, measure_smalltalk, sweep_smalltalk
    from ..config import PROJECT_ROOT

    runtime = cli_runtime()
    classifier = runtime.small_talk
    if classifier is None:
        raise click.ClickException("small talk is off ([small_talk] enabled = false) or no embedder loads")
    eval_dir = PROJECT_ROOT / "data" / "eval"
    if sweep:
        grid = sweep_smalltalk(classifier, load_smalltalk_split("dev", eval_dir), [0.3 + 0.02 * i for i in range(21)],
                        [0.0, 0.02, 0.05, 0.08, 0.1, 0.15])
        for r in grid[:10]:
            click.echo(f"min_score {r.min_score:.2f} margin {r.margin:.2f}: caught {r.caught}/{r.small_talk}, "
                       f"false positives {r.nist_labelled_fp}/{r.nist_labelled} labelled, "
                       f"{r.questions_fp}/{r.questions} questions")
        return
    for name in (("dev", "test") if spec == "both" else (spec,)):
        report = measure_smalltalk(classifier, load_smalltalk_split(name, eval_dir))
        if as_json:
            print_json(report.to_dict())
            continue
        click.echo(f"{name}: small talk caught {report.caught}/{report.small_talk} (right kind {report.right_kind}), "
                   f"precision {report.precision:.3f}; NIST messages taken for small talk "
                   f"{report.nist_labelled_fp}/{report.nist_labelled}; answerable evaluation questions taken for "
                   f"small talk {report.questions_fp}/{report.questions} ({report.fp_rate:.1%})")
        for line in report.misses:
            click.echo(f"    {line}")
