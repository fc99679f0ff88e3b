"""CPython's own full collection on a real heap, for scale against the
replays (session 12, BENCHMARKS.md): imports part of the standard library,
makes and drops 200,000 small dicts (half kept in a sliding window).
bench/results/session13/real_collect.py times gc.collect() on the heap it
leaves (seven times, thread CPU time; the median and minimum per tracked
object):

    /usr/bin/python3.11 bench/results/session13/real_collect.py bench/results/session12/real_cpython_gc.py
"""
import gc
import importlib

gc.disable()
for name in ['json', 'email', 'http.client', 'xml.dom.minidom', 'argparse', 'asyncio', 'decimal',
             'unittest', 'logging', 'csv', 'sqlite3', 'urllib.request', 'collections', 'typing',
             'dataclasses', 'inspect', 'pydoc', 'difflib', 'tarfile', 'zipfile']:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
window = []
for i in range(200000):
    window.append({'k': [i, str(i)], 'v': (i,)})
    if len(window) > 50000:
        window = window[25000:]
