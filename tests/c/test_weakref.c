/* Weak references from C: the compat names (PyWeakref_NewRef with a NULL
 * callback, PyWeakref_GetRef, PyWeakref_Check, PyObject_ClearWeakRefs) and
 * the native cgc_weakref_new with a C callback and context, at reference-
 * counting death and during collections. Ports of CPython's
 * test_bug1055820b, test_trash_weakref_clear and test_finalization's
 * weakref checks, plus callbacks that resurrect or create garbage. */
#include <cyclegc/Python.h>

#include "check.h"

/* ---- Obj: a container with three references ------------------------------ */

#define MAX_ID 1024

typedef struct {
    PyObject_HEAD
    PyObject *ref[3];
    int id;
} Obj;

static int deallocs[MAX_ID], finalizes[MAX_ID], clears[MAX_ID];
static void (*on_finalize)(Obj *self) = NULL;

/* The order things happened in: "c<id>" weakref callback (by probe id),
 * "f<id>" finalizer, "x<id>" tp_clear, "d<id>" dealloc. */
static char events[256][16];
static int n_events = 0;
static void event(char kind, int id) {
    if (n_events < 256) snprintf(events[n_events++], sizeof events[0], "%c%d", kind, id);
}
static int event_index(const char *e) {
    for (int i = 0; i < n_events; i++)
        if (strcmp(events[i], e) == 0) return i;
    return -1;
}

static int Obj_traverse(PyObject *self, visitproc visit, void *arg) {
    Obj *o = (Obj *)self;
    for (int i = 0; i < 3; i++) Py_VISIT(o->ref[i]);
    return 0;
}

static void drop_refs(Obj *o) {
    for (int i = 0; i < 3; i++) Py_CLEAR(o->ref[i]);
}

static int Obj_clear(PyObject *self) {
    clears[((Obj *)self)->id]++;
    event('x', ((Obj *)self)->id);
    drop_refs((Obj *)self);
    return 0;
}

static void free_obj(PyObject *self) {
    PyObject_GC_UnTrack(self);
    deallocs[((Obj *)self)->id]++;
    event('d', ((Obj *)self)->id);
    drop_refs((Obj *)self);
    PyObject_GC_Del(self);
}

static void Plain_dealloc(PyObject *self) { free_obj(self); }

static void Final_finalize(PyObject *self) {
    finalizes[((Obj *)self)->id]++;
    event('f', ((Obj *)self)->id);
    if (on_finalize) on_finalize((Obj *)self);
}

static void Final_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return;
    free_obj(self);
}

static void Legacy_del(PyObject *self) { (void)self; }

static void Legacy_dealloc(PyObject *self) {
    Py_SET_REFCNT(self, 1);
    Legacy_del(self);
    Py_SET_REFCNT(self, Py_REFCNT(self) - 1);
    if (Py_REFCNT(self) != 0) return;
    free_obj(self);
}

static PyTypeObject PlainType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Plain",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Plain_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
};

static PyTypeObject FinalType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Final",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Final_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
    .tp_finalize = Final_finalize,
};

static PyTypeObject LegacyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Legacy",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Legacy_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
    .tp_del = Legacy_del,
};

/* CPython's ContainerNoGC: one reference the collector cannot see. */
typedef struct {
    PyObject_HEAD
    PyObject *value;
} NoGc;

static void NoGc_dealloc(PyObject *self) {
    Py_CLEAR(((NoGc *)self)->value);
    PyObject_Del(self);
}

static PyTypeObject NoGcType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "NoGc",
    .tp_basicsize = sizeof(NoGc),
    .tp_dealloc = NoGc_dealloc,
};

static Obj *make(PyTypeObject *type, int id) {
    Obj *o = PyObject_GC_New(Obj, type);
    REQUIRE(o != NULL);
    for (int i = 0; i < 3; i++) o->ref[i] = NULL;
    o->id = id;
    PyObject_GC_Track(o);
    return o;
}

static void set_ref(Obj *from, int slot, void *to) {
    PyObject *old = from->ref[slot];
    from->ref[slot] = Py_XNewRef((PyObject *)to);
    Py_XDECREF(old);
}

static Obj *self_cycle(PyTypeObject *type, int id) {
    Obj *o = make(type, id);
    set_ref(o, 0, o);
    return o;
}

/* 1 if the weak reference's referent is gone (PyWeakref_GetRef gives 0). */
static int is_dead(PyObject *wr) {
    PyObject *referent = NULL;
    int r = PyWeakref_GetRef(wr, &referent);
    Py_XDECREF(referent);
    return r == 0;
}

static Py_ssize_t tracked_count(void) {
    cgc_object_list list;
    REQUIRE(cgc_get_objects(-1, &list) == 0);
    Py_ssize_t n = list.count;
    cgc_object_list_release(&list);
    return n;
}

/* ---- Callbacks: a Probe is the context of each weak reference's callback - */

typedef struct Probe {
    int id;
    int calls;
    PyObject *seen;       /* the weak reference passed to the last call */
    int dead_when_called; /* its referent was already gone */
    void (*hook)(struct Probe *self);
    void *data;
} Probe;

static void probe_callback(PyObject *wr, void *context) {
    Probe *p = (Probe *)context;
    p->calls++;
    p->seen = wr;
    p->dead_when_called = is_dead(wr);
    event('c', p->id);
    if (p->hook) p->hook(p);
}

static PyObject *weakref_cb(Obj *o, Probe *p) { return cgc_weakref_new((PyObject *)o, probe_callback, p); }

/* ---- Errors: counted, not printed ------------------------------------------ */

static int errors_by_kind[CGC_ERR_UNRAISABLE + 1];
static void count_error(cgc_error_kind kind, const char *message, void *context) {
    (void)message;
    (void)context;
    errors_by_kind[kind]++;
}

static void begin(void) {
    gc_collect();
    memset(deallocs, 0, sizeof deallocs);
    memset(finalizes, 0, sizeof finalizes);
    memset(clears, 0, sizeof clears);
    memset(errors_by_kind, 0, sizeof errors_by_kind);
    n_events = 0;
    on_finalize = NULL;
    REQUIRE_EQ_INT(tracked_count(), 0);
}

static void end(void) {
    on_finalize = NULL;
    gc_collect();
    CHECK_EQ_INT(tracked_count(), 0);
    for (int k = 0; k <= CGC_ERR_UNRAISABLE; k++) CHECK_EQ_INT(errors_by_kind[k], 0);
}

/* ---- The compat names -------------------------------------------------------- */

static void test_newref_and_getref(void) {
    begin();
    Obj *o = make(&PlainType, 1);
    PyObject *wr = PyWeakref_NewRef((PyObject *)o, NULL);
    REQUIRE(wr != NULL);
    CHECK(PyWeakref_Check(wr));
    CHECK(PyWeakref_CheckRef(wr));
    CHECK(!PyWeakref_Check(o));
    CHECK_EQ_INT(Py_REFCNT(o), 1);
    PyObject *again = PyWeakref_NewRef((PyObject *)o, NULL);
    CHECK(again == wr); /* weakref.ref(o) is weakref.ref(o) */
    Py_DECREF(again);
    CHECK_EQ_INT(cgc_weakref_count((PyObject *)o), 1); /* getweakrefcount */

    PyObject *ref = NULL;
    CHECK_EQ_INT(PyWeakref_GetRef(wr, &ref), 1);
    CHECK(ref == (PyObject *)o);
    CHECK_EQ_INT(Py_REFCNT(o), 2);
    Py_DECREF(ref);
    Py_DECREF(o);
    CHECK_EQ_INT(deallocs[1], 1);
    ref = (PyObject *)wr;
    CHECK_EQ_INT(PyWeakref_GetRef(wr, &ref), 0);
    CHECK(ref == NULL);

    /* Not a weak reference: -1 and an error. */
    Obj *p = make(&PlainType, 2);
    CHECK_EQ_INT(PyWeakref_GetRef((PyObject *)p, &ref), -1);
    CHECK(ref == NULL);
    CHECK(PyErr_Occurred() != NULL);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_TYPE);
    PyErr_Clear();
    CHECK(PyErr_Occurred() == NULL);
    errors_by_kind[CGC_ERR_TYPE] = 0;
    Py_DECREF(p);
    Py_DECREF(wr);
    end();
}

/* cyclegc has no callable objects: PyWeakref_NewRef takes only NULL. */
static void test_newref_rejects_a_callback(void) {
    begin();
    Obj *o = make(&PlainType, 1);
    Obj *callable = make(&PlainType, 2);
    PyObject *wr = PyWeakref_NewRef((PyObject *)o, (PyObject *)callable);
    CHECK(wr == NULL);
    CHECK(PyErr_Occurred() != NULL);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_VALUE);
    CHECK_CONTAINS(cgc_error_message(), "cgc_weakref_new");
    CHECK_EQ_INT(cgc_weakref_count((PyObject *)o), 0);
    PyErr_Clear();
    errors_by_kind[CGC_ERR_VALUE] = 0;
    /* Only GC objects can be weakly referenced. */
    NoGc *n = PyObject_New(NoGc, &NoGcType);
    REQUIRE(n != NULL);
    n->value = NULL;
    CHECK(PyWeakref_NewRef((PyObject *)n, NULL) == NULL);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_TYPE);
    PyErr_Clear();
    errors_by_kind[CGC_ERR_TYPE] = 0;
    Py_DECREF(n);
    Py_DECREF(o);
    Py_DECREF(callable);
    end();
}

/* ---- Reference-counting death and PyObject_ClearWeakRefs ----------------------- */

/* Every weak reference is cleared before the first callback runs. */
static PyObject *g_basic_at_death = NULL;
static int basic_dead_in_callback = -1;
static void basic_must_be_dead(Probe *self) {
    (void)self;
    basic_dead_in_callback = is_dead(g_basic_at_death);
}

static void test_callback_at_refcount_death(void) {
    begin();
    Obj *o = make(&PlainType, 1);
    Probe p1 = {1}, p2 = {2};
    PyObject *w1 = weakref_cb(o, &p1);
    PyObject *basic = PyWeakref_NewRef((PyObject *)o, NULL);
    PyObject *w2 = weakref_cb(o, &p2);
    g_basic_at_death = basic;
    p2.hook = basic_must_be_dead;
    CHECK(w1 != w2 && w1 != basic);
    CHECK_EQ_INT(cgc_weakref_count((PyObject *)o), 3);
    Py_DECREF(o);
    CHECK_EQ_INT(p1.calls, 1);
    CHECK_EQ_INT(p2.calls, 1);
    CHECK(p1.seen == w1);
    CHECK(p2.seen == w2);
    CHECK_EQ_INT(p1.dead_when_called, 1);
    CHECK_EQ_INT(p2.dead_when_called, 1);
    CHECK_EQ_INT(basic_dead_in_callback, 1);
    /* Newest first, as CPython; both before the object's dealloc. */
    CHECK(event_index("c2") >= 0 && event_index("c2") < event_index("c1"));
    CHECK(event_index("c1") < event_index("d1"));
    CHECK(is_dead(basic));
    Py_DECREF(w1);
    Py_DECREF(w2);
    Py_DECREF(basic);
    end();
}

static void test_clear_weakrefs(void) {
    begin();
    Obj *o = make(&PlainType, 1);
    Probe p = {1};
    PyObject *w = weakref_cb(o, &p);
    PyObject *basic = PyWeakref_NewRef((PyObject *)o, NULL);
    PyObject_ClearWeakRefs((PyObject *)o);
    CHECK_EQ_INT(p.calls, 1);
    CHECK(is_dead(w));
    CHECK(is_dead(basic));
    CHECK_EQ_INT(deallocs[1], 0);
    CHECK_EQ_INT(cgc_weakref_count((PyObject *)o), 0);
    Py_DECREF(o);
    CHECK_EQ_INT(p.calls, 1);
    CHECK_EQ_INT(deallocs[1], 1);
    Py_DECREF(w);
    Py_DECREF(basic);
    end();
}

/* A weak reference that dies before its referent never calls back. */
static void test_dead_weakref_never_calls_back(void) {
    begin();
    Obj *o = make(&PlainType, 1);
    Probe p = {1};
    PyObject *w = weakref_cb(o, &p);
    Py_DECREF(w);
    CHECK_EQ_INT(cgc_weakref_count((PyObject *)o), 0);
    Py_DECREF(o);
    CHECK_EQ_INT(p.calls, 0);
    end();
}

/* test_finalization's test_simple_resurrect: resurrected by its finalizer at
 * reference-counting death, the object keeps its weak references. */
static PyObject *lazarus = NULL;
static void resurrect(Obj *self) { lazarus = Py_NewRef((PyObject *)self); }

static void test_resurrection_at_death_keeps_weakrefs(void) {
    begin();
    on_finalize = resurrect;
    Obj *o = make(&FinalType, 1);
    Probe p = {1};
    PyObject *w = weakref_cb(o, &p);
    PyObject *basic = PyWeakref_NewRef((PyObject *)o, NULL);
    Py_DECREF(o);
    CHECK(lazarus == (PyObject *)o);
    CHECK_EQ_INT(deallocs[1], 0);
    CHECK(!is_dead(basic)); /* self.assertIsNot(wr(), None) */
    CHECK_EQ_INT(p.calls, 0);
    on_finalize = NULL;
    Py_CLEAR(lazarus);
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(finalizes[1], 1);
    CHECK(is_dead(basic)); /* self.assertIs(wr(), None) */
    CHECK_EQ_INT(p.calls, 1);
    Py_DECREF(w);
    Py_DECREF(basic);
    end();
}

/* ---- During a collection ------------------------------------------------------ */

/* test_bug1055820b: two self-cyclic trash objects whose weak reference
 * callbacks dereference the weak references: they run (twice) and see
 * nothing. */
static PyObject *wrs[2];
static PyObject *ouch[2];
static int n_ouch = 0;
static void read_all_weakrefs(Probe *self) {
    (void)self;
    for (n_ouch = 0; n_ouch < 2; n_ouch++) {
        ouch[n_ouch] = NULL;
        (void)PyWeakref_GetRef(wrs[n_ouch], &ouch[n_ouch]);
    }
}

static void test_bug1055820b(void) {
    begin();
    Probe probes[2] = {{0}, {1}};
    Obj *cs[2];
    for (int i = 0; i < 2; i++) {
        cs[i] = self_cycle(&PlainType, i);
        probes[i].hook = read_all_weakrefs;
        wrs[i] = weakref_cb(cs[i], &probes[i]);
    }
    n_ouch = 0;
    gc_collect();
    CHECK_EQ_INT(n_ouch, 0);
    Py_DECREF(cs[0]);
    Py_DECREF(cs[1]);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(n_ouch, 2); /* else the callbacks didn't run */
    CHECK_EQ_INT(probes[0].calls, 1);
    CHECK_EQ_INT(probes[1].calls, 1);
    for (int i = 0; i < n_ouch; i++) {
        CHECK(ouch[i] == NULL);
        Py_XDECREF(ouch[i]);
    }
    Py_DECREF(wrs[0]);
    Py_DECREF(wrs[1]);
    end();
}

/* test_trash_weakref_clear (bpo-38006):  Z <- Y <- A--+--> WZ -> C
 *                                                  ^  |
 *                                                  +--+
 * Y does not support GC, so the collector cannot know Z is garbage; WZ is
 * kept alive longer by a second cycle. The callback C must not run. */
static void test_trash_weakref_clear(void) {
    begin();
    Probe callback = {1};
    Obj *a = self_cycle(&PlainType, 1);
    NoGc *y = PyObject_New(NoGc, &NoGcType);
    REQUIRE(y != NULL);
    y->value = (PyObject *)make(&PlainType, 2); /* Z */
    set_ref(a, 1, y);
    Py_DECREF(y);
    PyObject *wz = weakref_cb((Obj *)y->value, &callback);
    set_ref(a, 2, wz);
    Obj *wr_cycle = self_cycle(&PlainType, 3);
    set_ref(wr_cycle, 1, wz);
    Py_DECREF(wz);
    gc_collect();
    Py_DECREF(a);
    Py_DECREF(wr_cycle);
    CHECK_EQ_INT(gc_collect(), 3);
    CHECK_EQ_INT(callback.calls, 0); /* callback.assert_not_called() */
    CHECK_EQ_INT(deallocs[1] + deallocs[2] + deallocs[3], 3);
    end();
}

/* Weak references to garbage are cleared, and their callbacks run, before
 * any finalizer or tp_clear; a finalizer sees them dead (CPython <= 3.13). */
static Obj *g_f, *g_p;
static PyObject *g_basic;
static int intact_in_callbacks = 0, basic_dead_in_finalizer = -1;
static void check_intact(Probe *self) {
    (void)self;
    intact_in_callbacks += clears[1] == 0 && clears[2] == 0 && finalizes[1] == 0 &&
                           g_f->ref[0] == (PyObject *)g_p && g_p->ref[0] == (PyObject *)g_f;
}
static void finalizer_reads_weakref(Obj *self) {
    (void)self;
    basic_dead_in_finalizer = is_dead(g_basic);
}

static void test_weakrefs_cleared_before_finalizers_and_clear(void) {
    begin();
    g_f = make(&FinalType, 1);
    g_p = make(&PlainType, 2);
    set_ref(g_f, 0, g_p);
    set_ref(g_p, 0, g_f);
    Probe pf = {10}, pp = {20};
    pf.hook = check_intact;
    pp.hook = check_intact;
    PyObject *wf = weakref_cb(g_f, &pf);
    PyObject *wp = weakref_cb(g_p, &pp);
    g_basic = PyWeakref_NewRef((PyObject *)g_p, NULL);
    on_finalize = finalizer_reads_weakref;
    intact_in_callbacks = 0;
    Py_DECREF(g_f);
    Py_DECREF(g_p);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(pf.calls, 1);
    CHECK_EQ_INT(pp.calls, 1);
    CHECK_EQ_INT(intact_in_callbacks, 2);
    CHECK_EQ_INT(basic_dead_in_finalizer, 1);
    int f = event_index("f1");
    CHECK(f > event_index("c10") && f > event_index("c20"));
    CHECK(event_index("x1") < 0 || event_index("x1") > f);
    CHECK(event_index("x2") < 0 || event_index("x2") > f);
    CHECK_EQ_INT(deallocs[1] + deallocs[2], 2);
    Py_DECREF(wf);
    Py_DECREF(wp);
    Py_DECREF(g_basic);
    end();
}

/* A weak reference that is garbage itself never calls back. */
static void test_garbage_weakref_never_calls_back(void) {
    begin();
    Probe p = {1};
    Obj *a = self_cycle(&PlainType, 1);
    PyObject *w = weakref_cb(a, &p);
    set_ref(a, 1, w);
    Py_DECREF(w);
    Py_DECREF(a);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(p.calls, 0);
    CHECK_EQ_INT(deallocs[1], 1);
    end();
}

/* A callback that resurrects garbage through its C context: the object and
 * what it reaches survive, intact; only the rest is counted. */
static PyObject *kept = NULL;
static void resurrect_data(Probe *self) { kept = Py_NewRef((PyObject *)self->data); }

static void test_callback_resurrects_through_context(void) {
    begin();
    Obj *x = self_cycle(&PlainType, 1);
    Obj *child = make(&PlainType, 2);
    set_ref(x, 1, child);
    set_ref(child, 0, x);
    Obj *z = self_cycle(&PlainType, 3);
    Probe p = {1};
    p.hook = resurrect_data;
    p.data = x;
    PyObject *wz = weakref_cb(z, &p);
    Py_DECREF(x);
    Py_DECREF(child);
    Py_DECREF(z);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(p.calls, 1);
    CHECK(kept == (PyObject *)x);
    CHECK_EQ_INT(deallocs[3], 1);
    CHECK_EQ_INT(deallocs[1] + deallocs[2], 0);
    CHECK_EQ_INT(clears[1] + clears[2], 0);
    CHECK(x->ref[1] == (PyObject *)child && child->ref[0] == (PyObject *)x);
    Py_CLEAR(kept);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs[1] + deallocs[2], 2);
    Py_DECREF(wz);
    end();
}

/* A callback that creates garbage: left for the next collection. */
static void make_garbage(Probe *self) {
    (void)self;
    Py_DECREF(self_cycle(&PlainType, 100));
}

static void test_callback_creates_garbage(void) {
    begin();
    Obj *z = self_cycle(&PlainType, 1);
    Probe p = {1};
    p.hook = make_garbage;
    PyObject *wz = weakref_cb(z, &p);
    Py_DECREF(z);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(p.calls, 1);
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(deallocs[100], 0);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs[100], 1);
    Py_DECREF(wz);
    end();
}

/* A callback that asks for a collection gets 0. */
static Py_ssize_t nested = -1;
static void collect_from_callback(Probe *self) {
    (void)self;
    nested = cgc_collect(2);
}

static void test_callback_collects(void) {
    begin();
    Obj *z = self_cycle(&PlainType, 1);
    Probe p = {1};
    p.hook = collect_from_callback;
    PyObject *wz = weakref_cb(z, &p);
    Py_DECREF(z);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(nested, 0);
    CHECK_EQ_INT(deallocs[1], 1);
    Py_DECREF(wz);
    end();
}

/* gh-91636: a weak reference a finalizer makes to other garbage is cleared
 * before tp_clear, without calling back. */
static Obj *g_target;
static Probe g_late = {2};
static PyObject *g_made = NULL;
static void make_weakref(Obj *self) {
    (void)self;
    g_made = weakref_cb(g_target, &g_late);
}

static void test_weakref_made_by_finalizer(void) {
    begin();
    Obj *f = make(&FinalType, 1);
    g_target = make(&PlainType, 2);
    set_ref(f, 0, g_target);
    set_ref(g_target, 0, f);
    on_finalize = make_weakref;
    g_late.calls = 0;
    Py_DECREF(f);
    Py_DECREF(g_target);
    CHECK_EQ_INT(gc_collect(), 2);
    REQUIRE(g_made != NULL);
    CHECK(is_dead(g_made));
    CHECK_EQ_INT(g_late.calls, 0);
    CHECK_EQ_INT(deallocs[1] + deallocs[2], 2);
    Py_CLEAR(g_made);
    end();
}

/* The weak reference of a tp_del object in a cycle stays alive. */
static void test_uncollectable_keeps_weakrefs(void) {
    begin();
    Obj *l = self_cycle(&LegacyType, 1);
    Probe p = {1};
    PyObject *w = weakref_cb(l, &p);
    Py_DECREF(l);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(cgc_garbage_count(), 1);
    CHECK(!is_dead(w));
    CHECK_EQ_INT(p.calls, 0);
    Py_CLEAR(l->ref[0]);
    cgc_garbage_clear();
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(p.calls, 1);
    Py_DECREF(w);
    end();
}

int main(void) {
    cgc_set_error_hook(count_error, NULL);
    PyGC_Disable();
    RUN(test_newref_and_getref);
    RUN(test_newref_rejects_a_callback);
    RUN(test_callback_at_refcount_death);
    RUN(test_clear_weakrefs);
    RUN(test_dead_weakref_never_calls_back);
    RUN(test_resurrection_at_death_keeps_weakrefs);
    RUN(test_bug1055820b);
    RUN(test_trash_weakref_clear);
    RUN(test_weakrefs_cleared_before_finalizers_and_clear);
    RUN(test_garbage_weakref_never_calls_back);
    RUN(test_callback_resurrects_through_context);
    RUN(test_callback_creates_garbage);
    RUN(test_callback_collects);
    RUN(test_weakref_made_by_finalizer);
    RUN(test_uncollectable_keeps_weakrefs);
    return CHECK_DONE();
}
