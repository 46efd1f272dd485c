"""The report generator's parts (Python 3.9+ standard library only; reads result files, never CUDA):

results   the one reader of a run folder, used by the report, the gate, the baseline writer and ci/
model     the model of one run: plans, coverage per catalog ID, the baseline file, totals
timeline  the timeline and block-chart drawings (inline SVG)
templates the templates in reports/templates/, filled with string.Template, every value escaped unless markup
page      the report page of one run: its skeleton, header and data block; each family's and each test's file
sections  the report page's sections, one function each, and a family's rows
test_row  a test's row in its family's table, and its details
page_parts  pieces the report and the comparison page share: badges, links, header facts, environment tables
common    vocabulary and formatting shared by all of them
"""
