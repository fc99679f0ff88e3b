# A DOM-shaped heap: xml.dom.minidom parses a generated document of about
# 40k elements; every node holds its parent, its owner document, its
# children's list and attribute maps (cycles everywhere). A second
# document is dropped without unlinking: cyclic garbage.
import random
from xml.dom import minidom
random.seed(13)

def make_xml(n):
    parts = ['<root>']
    depth = 0
    for i in range(n):
        while depth > 0 and (depth >= 25 or random.random() < 0.5):
            parts.append("</e>"); depth -= 1
            if random.random() < 0.5: break
        parts.append(f'<e id="{i}" kind="k{i % 11}">t{i}'); depth += 1
    parts.append('</e>' * depth + '</root>')
    return ''.join(parts)

doc = minidom.parseString(make_xml(40000))
by_id = {e.getAttribute('id'): e for e in doc.getElementsByTagName('e')}
garbage = minidom.parseString(make_xml(8000))
del garbage
