# A data-processing shaped heap: a big list of records (tuples and small dicts),
# an index dict over them, sets of keys, a graph of objects with back-pointers
# (cycles), and some cyclic garbage left behind.
import random
random.seed(9)

class Rec:
    __slots__ = ("id", "tags", "parent", "children")
    def __init__(self, i):
        self.id = i; self.tags = {"k": i % 7, "v": [i, i + 1]}; self.parent = None; self.children = []

records = [Rec(i) for i in range(60000)]
for r in records[1:]:
    p = records[random.randrange(0, r.id)]
    r.parent = p; p.children.append(r)
index = {r.id: r for r in records}
by_tag = {}
for r in records:
    by_tag.setdefault(r.tags["k"], []).append(r)
rows = [(i, str(i), (i, i * 2), [i]) for i in range(80000)]
big = list(range(0, 200000, 3))  # ints: not tracked
sets = [frozenset(range(i, i + 3)) for i in range(2000)]
# cyclic garbage: dropped rings of dicts
for k in range(3000):
    a = {}; b = {"a": a}; a["b"] = b; c = [a, b]; a["c"] = c
del a, b, c
