# A workload unlike the shared graphs: ASTs of stdlib modules kept alive,
# a symbol table (dict of lists of tuples) over them, class instances with
# __dict__, and a share of cyclic garbage (parent links) left behind.
import ast, gc, os, sysconfig, random
gc.disable()
random.seed(8)
lib = sysconfig.get_paths()["stdlib"]
files = sorted(f for f in os.listdir(lib) if f.endswith(".py"))[:120]
trees = {}
for f in files:
    with open(os.path.join(lib, f), encoding="utf-8", errors="replace") as h:
        try:
            trees[f] = ast.parse(h.read())
        except SyntaxError:
            pass

class Sym:
    def __init__(self, name, node, owner):
        self.name, self.node, self.owner, self.uses = name, node, owner, []

symbols = {}
for f, t in trees.items():
    for node in ast.walk(t):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            s = Sym(node.name, node, f)
            symbols.setdefault(node.name, []).append(s)
for name, syms in symbols.items():
    for s in syms:
        s.uses.append((s, syms))      # a cycle through the list

# garbage: every third tree gets parent links and is dropped
for i, f in enumerate(list(trees)):
    if i % 3 == 0:
        for node in ast.walk(trees[f]):
            for child in ast.iter_child_nodes(node):
                child.parent = node
        del trees[f]
