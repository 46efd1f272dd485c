"""Small pieces of markup that several parts of a page use, and the report page shares with the comparison page:
status badges, key=value lists, links to a test, the facts that head a page, and the environment tables.
Each fills a fragment of reports/templates/fragments.html with values the templates escape (templates.py).
Python 3.9+ standard library only."""

from __future__ import annotations


from typing import Any, Dict, List, Optional, Sequence, Tuple

from .common import (COVERAGE_LABEL, Markup, TEST_LABEL, breakable, cuda_version, dig, driver_text, flatten, fmt_shown,
                     fmt_value, plural, slug)
from .results import outcome, run_mode as results_run_mode
from .templates import EMPTY, attrs, fill, join


def dash() -> Markup:
    """What an empty cell shows."""
    return fill("dash")


def badge(status: str, label: Optional[str] = None, title: Optional[str] = None) -> Markup:
    text = label if label is not None else TEST_LABEL.get(status, COVERAGE_LABEL.get(status, status))
    return fill("badge", status=slug(status), attrs=attrs(title=title), text=text)


def kv_list(values: Dict[str, Any]) -> Markup:
    if not values:
        return dash()
    return fill("kv_list", items=join(fill("kv_item", key=str(k), value=fmt_shown(v)) for k, v in values.items()))


def test_anchor(test: Dict[str, Any]) -> str:
    return "t-" + slug(test["ctest_name"])


def variant_tag(test: Dict[str, Any]) -> Markup:
    return fill("tag", text=test["variant"]) if test["variant"] else EMPTY


def test_link(test: Dict[str, Any]) -> Markup:
    """The test's name, linked to its row, with its variant and its status."""
    return fill("test_link", link=fill("mono_link", anchor=test_anchor(test), text=breakable(test["gtest_name"])),
                variant=variant_tag(test), badge=badge(outcome(test)))


# ------------------------------------------------------------------------------------------------
# The facts that head a page
# ------------------------------------------------------------------------------------------------
def gpu_fact(env: Dict[str, Any]) -> Markup:
    """The GPU line of a run: name, capability, SMs, copy engines, UUID; or why there was none."""
    gpu = env.get("gpu")
    if not isinstance(gpu, dict):
        return fill("no_gpu", reason=env.get("gpu_unavailable_reason") or "no reason recorded")
    parts = [gpu.get("name") or "unnamed GPU"]
    for key, form in (("compute_capability", "CC %s"), ("arch", "%s"), ("sm_count", "%s SMs"),
                      ("async_engine_count", "%s copy engines"), ("concurrent_kernels", "concurrent kernels %s")):
        value = gpu.get(key)
        # The architecture is shown when it is a non-empty value, the numbers whenever present (0 included).
        if (value if key == "arch" else value is not None):
            parts.append(form % fmt_value(value))
    uuid = fill("gpu_uuid", uuid=gpu.get("uuid")) if gpu.get("uuid") else EMPTY
    return join([join(parts, " \u00b7 "), uuid])


def commit_fact(env: Dict[str, Any]) -> Markup:
    commit = dig(env, "streamcheck", "commit")
    version = dig(env, "streamcheck", "version")
    return fill("commit", commit=commit or "", short=str(commit)[:12] if commit else "unknown",
                dirty=fill("dirty") if dig(env, "streamcheck", "dirty") is True else EMPTY,
                version=fill("muted_tail", text="streamcheck %s" % fmt_value(version)) if version else EMPTY)


def run_fact(run: Dict[str, Any]) -> Markup:
    return fill("run", id=run["id"], started=dig(run["env"], "run", "started_utc") or "?",
                finished=dig(run["env"], "run", "finished_utc") or "not finished",
                mode=results_run_mode(run["env"]))


def priority_fact(gpu: Optional[Dict[str, Any]]) -> Markup:
    least, greatest = dig(gpu, "priority_range", "least"), dig(gpu, "priority_range", "greatest")
    if least is None and greatest is None:
        return Markup("\u2014")
    levels = plural(least - greatest + 1, "level") if isinstance(least, int) and isinstance(greatest, int) else None
    return fill("priorities", least=least, greatest=greatest,
                levels=fill("muted_tail", text="(%s)" % levels) if levels else EMPTY)


def driver_fact(env: Dict[str, Any]) -> str:
    """"580.159.04 (CUDA 13.0) · open kernel module 580.159.04"."""
    text = driver_text(dig(env, "driver", "version"), dig(env, "cuda", "driver_version"))
    module = dig(env, "driver", "kernel_module")
    if isinstance(module, dict) and module.get("version"):
        text += " \u00b7 %s kernel module %s" % (module.get("flavor") or "", module["version"])
    return text


def environment_facts(env: Dict[str, Any]) -> List[Tuple[str, Markup]]:
    """(term, markup) of the facts every page heads with: GPU, CUDA, commit, tick, priorities, tracing."""
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else None
    tick = dig(gpu, "timer_tick_ns")
    tracing = env.get("tracing") or {}
    reason = tracing.get("reason")
    return [("GPU", gpu_fact(env)),
            ("Driver", join([driver_fact(env)])),
            ("CUDA runtime", join([cuda_version(dig(env, "cuda", "runtime_version"))])),
            ("Commit", commit_fact(env)),
            ("Timer tick", join(["%s ns" % fmt_value(tick) if tick is not None else "\u2014"])),
            ("Priority range", priority_fact(gpu)),
            ("Tracing", fill("tracing", state="on" if tracing.get("enabled") is True else "off",
                             reason=" \u2014 %s" % fmt_value(reason) if reason else ""))]


def facts_markup(facts: Sequence[Tuple[str, Markup]]) -> Markup:
    return join(fill("fact", term=term, value=value) for term, value in facts)


# ------------------------------------------------------------------------------------------------
# env.json as tables, one column per run
# ------------------------------------------------------------------------------------------------
def kv_table(runs: Sequence[Dict[str, Any]], title: str, rows: List[Tuple[str, List[Any]]],
             unset_label: str = "null") -> Markup:
    """Keys and their values, one column per run; with several runs, rows whose values differ are marked."""
    if not rows:
        return fill("kv_table_empty", title=title)
    multi = len(runs) > 1
    head = join(fill("th", text=r["id"]) for r in runs) if multi else fill("th", text="Value")
    lines = []
    for key, values in rows:
        differs = multi and len({fmt_value(v) for v in values}) > 1
        cells = join(fill("kv_cell", value=fill("unset", text=unset_label) if v is None else v) for v in values)
        lines.append(fill("kv_row", attrs=attrs(class_="diff-row" if differs else None), key=key, cells=cells))
    return fill("kv_table", title=title, head=head, rows=join(lines))


def section_rows(runs: Sequence[Dict[str, Any]], key: str) -> List[Tuple[str, List[Any]]]:
    """The dotted keys of env.json's section in any of the runs, with each run's value (None: absent)."""
    flat = [dict(flatten(r["env"].get(key) if isinstance(r["env"].get(key), dict) else {})) for r in runs]
    keys: List[str] = []
    for f in flat:
        keys.extend(k for k in f if k not in keys)
    return [(k, [f.get(k) for f in flat]) for k in keys]


def environment_tables(runs: Sequence[Dict[str, Any]]) -> Markup:
    """Every section of env.json as a table, one column per run."""
    out = []
    variables = section_rows(runs, "environment")
    variables.sort(key=lambda kv: (all(v is None for v in kv[1]), kv[0]))
    out.append(kv_table(runs, "Environment variables", variables, unset_label="unset"))
    out.append(kv_table(runs, "Build", section_rows(runs, "build")))
    out.append(kv_table(runs, "streamcheck", section_rows(runs, "streamcheck")))
    cuda_rows = [(k, [cuda_version(v) if isinstance(v, int) else v for v in vals])
                 for k, vals in section_rows(runs, "cuda")]
    cuda_rows += [("%s (raw)" % k, vals) for k, vals in section_rows(runs, "cuda")]
    out.append(kv_table(runs, "CUDA", cuda_rows))
    out.append(kv_table(runs, "Host", section_rows(runs, "host")))
    out.append(kv_table(runs, "Tracing", section_rows(runs, "tracing")))
    gpu_rows = section_rows(runs, "gpu")
    if any(not isinstance(r["env"].get("gpu"), dict) for r in runs):
        gpu_rows.insert(0, ("unavailable_reason", [r["env"].get("gpu_unavailable_reason") for r in runs]))
    out.append(kv_table(runs, "GPU", gpu_rows))
    out.append(kv_table(runs, "Run", section_rows(runs, "run") + [("folder", [r["dir"] for r in runs])]))
    return join(out, "\n")
