"""A small program for tools/snapshot_heap.py's test: live cycles held by
module globals, and a known amount of cyclic garbage left behind."""
import gc

GARBAGE_PAIRS = 25       # 2-cycles of lists: 2 nodes each
GARBAGE_SELF_LISTS = 10  # lists that contain themselves: 1 node each


class Node:
    __slots__ = ("name", "next")  # no __dict__: one tracked object per Node

    def __init__(self, name):
        self.name = name
        self.next = None


def make_garbage():
    for _ in range(GARBAGE_PAIRS):
        a = []
        b = [a]
        a.append(b)
    for _ in range(GARBAGE_SELF_LISTS):
        s = []
        s.append(s)


gc.collect()
gc.disable()  # the garbage must still be there at the snapshot

# Live structures: a ring of Nodes and a dict that refers to itself.
ring = [Node(i) for i in range(100)]
for i, node in enumerate(ring):
    node.next = ring[(i + 1) % len(ring)]
registry = {"ring": ring}
registry["self"] = registry

make_garbage()
EXPECTED_GARBAGE = 2 * GARBAGE_PAIRS + GARBAGE_SELF_LISTS
