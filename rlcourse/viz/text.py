"""Language-model samples side by side: one row per prompt, one column per model (before/after)."""

from __future__ import annotations

import html
import textwrap

__all__ = ["SamplesTable", "samples_table"]

_WRAP = 36  # characters per line of a text cell


class SamplesTable:
    """Rows of ``(prompt, samples per column)``; Jupyter shows it as an HTML table, ``print`` as
    text. ``headers`` names the columns (strings, the first one the prompt's), ``rows`` holds
    the strings: each row ``(prompt, cell, ...)`` with one entry per header, a cell a tuple of
    samples (a single string is one sample). Both views are deterministic."""

    def __init__(self, headers: tuple, rows: tuple):
        headers = tuple(_strings("headers", headers))
        if len(headers) < 2:
            raise ValueError(f"headers: expected the prompt's header and at least one column's, "
                             f"got {headers!r}")
        if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
            raise TypeError(f"rows: expected a list of rows (prompt, samples, ...), "
                            f"got {type(rows).__name__}")
        checked = []
        for i, row in enumerate(rows):
            if isinstance(row, (str, bytes)) or not hasattr(row, "__len__") or len(row) != len(headers):
                raise ValueError(f"rows[{i}]: expected {len(headers)} entries (prompt, then one per "
                                 f"column of headers), got {row!r}")
            prompt, *cells = row
            if not isinstance(prompt, str):
                raise TypeError(f"rows[{i}][0]: expected the prompt as a string, got {type(prompt).__name__}")
            checked.append((prompt, *((c,) if isinstance(c, str) else
                                      tuple(_strings(f"rows[{i}][{j + 1}]", c))
                                      for j, c in enumerate(cells))))
        self.headers, self.rows = headers, tuple(checked)

    def __str__(self) -> str:
        cells = [[[self.headers[0]], *[[h] for h in self.headers[1:]]]]
        for prompt, *columns in self.rows:
            cells.append([_wrap([prompt]), *(_wrap(samples) for samples in columns)])
        widths = [max(len(line) for row in cells for line in row[j]) for j in range(len(self.headers))]
        out = []
        for r, row in enumerate(cells):
            for k in range(max(len(c) for c in row)):
                line = " | ".join((c[k] if k < len(c) else "").ljust(w) for c, w in zip(row, widths))
                out.append(line.rstrip())
            if r == 0:
                out.append("-+-".join("-" * w for w in widths))
        return "\n".join(out)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        td = "padding:2px 8px;border:1px solid #ddd;vertical-align:top;text-align:left;white-space:pre-wrap"
        head = "".join(f'<th style="{td}">{html.escape(h)}</th>' for h in self.headers)
        body = []
        for prompt, *columns in self.rows:
            cells = [f'<td style="{td}">{html.escape(prompt)}</td>']
            for samples in columns:
                shown = "<br>".join(_sample_html(prompt, s) for s in samples)
                cells.append(f'<td style="{td}">{shown}</td>')
            body.append("<tr>" + "".join(cells) + "</tr>")
        return (f'<table style="border-collapse:collapse;font:12px/1.4 monospace">'
                f"<tr>{head}</tr>{''.join(body)}</table>")


def _wrap(samples) -> list[str]:
    lines = []
    for s in samples:
        lines.extend(textwrap.wrap(s, _WRAP, replace_whitespace=False, drop_whitespace=False) or [""])
    return lines


def _sample_html(prompt: str, sample: str) -> str:
    """A sample, its prompt prefix (if it repeats the prompt) in grey so the completion stands out."""
    if prompt and sample.startswith(prompt):
        return (f'<span style="color:#999">{html.escape(prompt)}</span>'
                f"{html.escape(sample[len(prompt):])}")
    return html.escape(sample)


def samples_table(prompts, before, after=None, labels=("before", "after")) -> SamplesTable:
    """A table of language-model samples: one row per prompt, a column of ``before`` samples and
    (if given) one of ``after`` samples, headed by ``labels``.

    ``prompts`` is a list of ``P`` strings; ``before``/``after`` lists of ``P`` entries, each a
    string or a list of strings (several samples of one prompt). Decode token ids first (e.g.
    ``tokenizer.decode_completions``). ``print`` it for text, or let Jupyter show the HTML.
    """
    prompts = _strings("prompts", prompts)
    columns = [("before", before)] + ([] if after is None else [("after", after)])
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__iter__"):
        raise TypeError(f"labels: expected a column name per column, e.g. ('before', 'after'), "
                        f"got {type(labels).__name__} {labels!r}")
    labels = tuple(str(x) for x in labels)
    if len(labels) < len(columns):
        raise ValueError(f"labels: expected {len(columns)} column names, got {labels!r}")
    checked = []
    for name, column in columns:
        if isinstance(column, str) or not hasattr(column, "__len__") or len(column) != len(prompts):
            got = f"{len(column)} entries" if hasattr(column, "__len__") and not isinstance(column, str) \
                else type(column).__name__
            raise ValueError(f"{name}: expected {len(prompts)} entries (one per prompt), got {got}")
        checked.append([(c,) if isinstance(c, str) else tuple(_strings(f"{name}[{i}]", c))
                        for i, c in enumerate(column)])
    rows = tuple((p, *cells) for p, *cells in zip(prompts, *checked))
    return SamplesTable(("prompt", *labels[:len(columns)]), rows)


def _strings(name: str, values) -> list[str]:
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a list of strings, got {type(values).__name__}")
    values = list(values)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise TypeError(f"{name}[{i}]: expected a string (decode token ids first), "
                            f"got {type(v).__name__}")
    return values
