# A workload unlike the shared graphs: an XML tree, a dataclass graph with
# back references, asyncio tasks, a closure-heavy module, and some garbage.
import asyncio, dataclasses, json, xml.etree.ElementTree as ET, collections, functools, random, re, argparse, email.message

random.seed(7)
root = ET.Element("root")
for i in range(3000):
    e = ET.SubElement(root, "item", id=str(i))
    ET.SubElement(e, "name").text = f"n{i}"
doc = ET.tostring(root)
tree = ET.fromstring(doc)

@dataclasses.dataclass
class Node:
    name: str
    parent: "Node | None" = None
    children: list = dataclasses.field(default_factory=list)

top = Node("top")
for i in range(2000):
    p = random.choice([top] + top.children[-50:]) if top.children else top
    n = Node(f"c{i}", parent=p)
    p.children.append(n)
    top.children.append(n)

def make_counter():
    count = 0
    def inc():
        nonlocal count
        count += 1
        return count
    inc.self = inc  # a cycle through the function's dict
    return inc
counters = [make_counter() for _ in range(1000)]

async def worker(q, out):
    while True:
        item = await q.get()
        out.append(json.dumps({"item": item}))
        q.task_done()
async def main():
    q = asyncio.Queue()
    out = []
    tasks = [asyncio.create_task(worker(q, out)) for _ in range(20)]
    for i in range(500): q.put_nowait(i)
    await q.join()
    for t in tasks: t.cancel()
    return out
results = asyncio.run(main())

# garbage: cycles dropped
for i in range(3000):
    a = {"i": i}; b = [a]; a["b"] = b
    m = email.message.Message(); m["x"] = str(i); m.self = m
