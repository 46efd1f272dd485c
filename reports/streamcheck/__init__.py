"""The report generator's parts (Python 3.9+ standard library only; reads result files, never CUDA):

results   the one reader of a run folder, used by the report, the gate, the baseline writer and ci/
model     the model of one run: plans, coverage per catalog ID, the baseline file, totals
timeline  the timeline and block-chart drawings (inline SVG)
templates the page templates in reports/templates/, filled with string.Template
page      the report page of one run
common    vocabulary and formatting shared by all of them
"""
