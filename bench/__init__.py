"""The benchmarks: each ``python bench/NAME.py`` prints its figures as JSON lines on stdout.

``bench/record.py`` runs one of them and keeps its lines, with the command, the time and the
machine, in the store of record (:data:`bench.report.MEASUREMENTS`); ``bench/report.py`` writes
the page that shows them (:data:`bench.report.REPORT`). A package so that the tests and the
benchmarks themselves can import what they share; each file still runs as a script.
"""
