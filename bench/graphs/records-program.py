# A service-shaped heap: a JSON document decoded into nested dicts and
# lists (acyclic containers), dataclass instances built from it that refer
# to each other (an order refers to its customer, the customer to its
# orders), an lru_cache full of results, closures kept in a registry, and
# some request objects dropped in cycles.
import json, random, functools
from dataclasses import dataclass, field
random.seed(21)

raw = json.dumps([{"id": i, "name": f"c{i}", "tags": [f"t{j}" for j in range(i % 5)],
                   "address": {"city": f"x{i % 97}", "zip": i * 7 % 10000},
                   "orders": [{"sku": j, "qty": (i + j) % 9, "price": [j, i % 13]} for j in range(i % 7)]}
                  for i in range(12000)])
data = json.loads(raw)

@dataclass
class Customer:
    id: int
    name: str
    orders: list = field(default_factory=list)
    friends: list = field(default_factory=list)

@dataclass
class Order:
    customer: Customer
    sku: int
    lines: dict

customers = {}
for rec in data:
    c = Customer(rec["id"], rec["name"])
    for o in rec["orders"]:
        c.orders.append(Order(c, o["sku"], {"qty": o["qty"], "price": o["price"]}))
    customers[c.id] = c
ids = list(customers)
for c in customers.values():
    c.friends = [customers[random.choice(ids)] for _ in range(3)]

@functools.lru_cache(maxsize=5000)
def summary(cid):
    c = customers[cid]
    return {"n": len(c.orders), "friends": tuple(f.id for f in c.friends)}
for cid in random.sample(ids, 5000):
    summary(cid)

registry = [(lambda k: (lambda: customers[k]))(k) for k in ids[:3000]]

class Request:
    def __init__(self, c):
        self.customer = c; self.ctx = {"req": self, "tmp": [c.id] * 3}
for c in random.sample(list(customers.values()), 4000):
    Request(c)   # each is a cycle through its ctx dict: garbage
