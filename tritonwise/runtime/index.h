/* The plan index: a function's recent cached calls, found again from their operands' fields
 * without building the signature; included by launch.c after hit.h and program.h.
 *
 * A call's *words* are its signature's fields as int64s: a count word, then per operand a plain
 * tensor's words (aten.cpp's tritonwise_tensor_words: a header with bit 63 set, the sizes, the
 * strides) or one tag per float, bool or int in the range configure() gave, then the given
 * outputs' (None or plain tensors). Equal words are an equal signature (hit.h's build_signature,
 * runtime/arguments.py's call_signature), the key of the plan cache; tests/runtime/
 * test_plan_index.py holds the two together. Where any operand has no words (another type, or no
 * ATen helpers), the call goes through serve() alone.
 *
 * The index holds INDEX_SLOTS calls that a plan served through serve(), each with the plan's
 * Record and signature, and launches a call whose words it holds from that Record: no signature,
 * no dict lookup, no LRU move. The plan cache (runtime/dispatch.py) calls forget() on each put
 * and counts the signatures it hands back (least recently used first) as used, so the index never
 * outlives a plan it points at and the LRU does not evict a plan only the index has served.
 */

#define INDEX_SLOTS 8
#define MAX_WORDS 512

enum { WORD_FLOAT = 1, WORD_BOOL, WORD_INT, WORD_NONE };

typedef struct {
    uint64_t hash, used; /* used: the index's clock at the entry's last call */
    Py_ssize_t n_words;
    int64_t *words;
    PyObject *record, *key; /* the plan's Record and the call's signature */
} IndexEntry;

typedef struct {
    IndexEntry slots[INDEX_SLOTS];
    uint64_t clock; /* calls the index has served or taken in */
} PlanIndex;

/* A scalar operand's word: its key's class (hit.h's scalar_key), or 0 where Python keys it. */
static int64_t scalar_word(PyObject *a) {
    if (PyFloat_CheckExact(a)) return WORD_FLOAT;
    if (PyBool_Check(a)) return WORD_BOOL;
    if (!PyLong_CheckExact(a)) return 0;
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(a, &overflow);
    return !overflow && value >= int_lowest && value <= int_highest ? WORD_INT : 0;
}

/* A call's words into `words` (MAX_WORDS of room): their number, or -1 where an operand has none. */
static Py_ssize_t call_words(PyObject *args, PyObject *outs, int64_t *words) {
    Py_ssize_t n_in = PyTuple_GET_SIZE(args), n_out = gives_outputs(outs) ? PyTuple_GET_SIZE(outs) : 0, n = 1;
    if (aten_tensor_words == NULL) return -1;
    words[0] = (int64_t)n_in << 32 | n_out;
    for (Py_ssize_t k = 0; k < n_in + n_out; ++k) {
        PyObject *a = k < n_in ? PyTuple_GET_ITEM(args, k) : PyTuple_GET_ITEM(outs, k - n_in);
        if ((PyObject *)Py_TYPE(a) == tensor_type) {
            Py_ssize_t written = aten_tensor_words(a, words + n, MAX_WORDS - n);
            if (written < 0) return -1;
            n += written;
            continue;
        }
        int64_t word = k < n_in ? scalar_word(a) : a == Py_None ? WORD_NONE : 0;
        if (word == 0 || n == MAX_WORDS) {
            PyErr_Clear();
            return -1;
        }
        words[n++] = word;
    }
    return n;
}

static uint64_t words_hash(const int64_t *words, Py_ssize_t n) {
    uint64_t hash = 14695981039346656037ULL; /* FNV-1a over the words */
    for (Py_ssize_t k = 0; k < n; ++k) hash = (hash ^ (uint64_t)words[k]) * 1099511628211ULL;
    return hash;
}

static IndexEntry *index_find(PlanIndex *index, const int64_t *words, Py_ssize_t n, uint64_t hash) {
    for (int k = 0; k < INDEX_SLOTS; ++k) {
        IndexEntry *e = &index->slots[k];
        if (e->record != NULL && e->hash == hash && e->n_words == n && !memcmp(e->words, words, n * sizeof *words))
            return e;
    }
    return NULL;
}

static void entry_clear(IndexEntry *e) {
    PyMem_Free(e->words);
    Py_CLEAR(e->record);
    Py_CLEAR(e->key);
    e->words = NULL;
    e->n_words = 0;
}

/* The least recently used entry held (NULL where none is), or an empty one where `take_empty`. */
static IndexEntry *index_oldest(PlanIndex *index, int take_empty) {
    IndexEntry *oldest = NULL;
    for (int k = 0; k < INDEX_SLOTS; ++k) {
        IndexEntry *e = &index->slots[k];
        if (e->key == NULL && take_empty) return e;
        if (e->key != NULL && (oldest == NULL || e->used < oldest->used)) oldest = e;
    }
    return oldest;
}

/* Hold a served call in place of the least recently used; the call it displaces counts as a use
 * in `plans`' LRU. */
static void index_put(PlanIndex *index, PyObject *plans, const int64_t *words, Py_ssize_t n, uint64_t hash,
                      PyObject *record, PyObject *key) {
    IndexEntry *e = index_oldest(index, 1);
    int64_t *copy = PyMem_Malloc(n * sizeof *words);
    if (copy == NULL) return;
    if (e->key != NULL) {
        PyObject *moved = PyObject_CallMethodOneArg(plans, name_move_to_end, e->key);
        Py_XDECREF(moved);
        PyErr_Clear(); /* a key the cache no longer holds */
    }
    entry_clear(e);
    memcpy(copy, words, n * sizeof *words);
    *e = (IndexEntry){hash, ++index->clock, n, copy, Py_NewRef(record), Py_NewRef(key)};
}

/* Empty the index; the signatures it held, least recently used first, as a list (NULL with an
 * exception set on failure). */
static PyObject *index_forget(PlanIndex *index) {
    PyObject *held = PyList_New(0);
    for (IndexEntry *oldest = index_oldest(index, 0); oldest != NULL; oldest = index_oldest(index, 0)) {
        if (held != NULL && PyList_Append(held, oldest->key) < 0) Py_CLEAR(held);
        entry_clear(oldest);
    }
    return held;
}

/* serve() (hit.h) with the index in front of it: a call the index holds is launched from its
 * Record; one a plan serves through serve() is put in. Returns as serve() does. */
static PyObject *serve_indexed(PlanIndex *index, PyObject *plans, PyObject *args, PyObject *outs, PyObject *programs,
                               PyObject **key_out) {
    int64_t words[MAX_WORDS];
    Py_ssize_t n = call_words(args, outs, words);
    uint64_t hash = n > 0 ? words_hash(words, n) : 0;
    IndexEntry *held = n > 0 ? index_find(index, words, n, hash) : NULL;
    if (held != NULL) {
        PyObject *record = Py_NewRef(held->record), *key = Py_NewRef(held->key); /* Python may run: keep them */
        held->used = ++index->clock;
        PyObject *given = gives_outputs(outs) ? outs : NULL;
        PyObject *result = hooks_quiet() ? run_launch(&((Record *)record)->launch, key, args, given) : NULL;
        Py_DECREF(record);
        Py_DECREF(key);
        *key_out = NULL;
        if (result != NULL) return result;
    }
    PyErr_Clear(); /* what declined is decided again on serve()'s path, and reported there */
    PyObject *record = NULL, *result = serve(plans, args, outs, programs, key_out, &record);
    if (result != NULL && record != NULL && n > 0) index_put(index, plans, words, n, hash, record, *key_out);
    Py_XDECREF(record);
    return result;
}

/* call_words(args[, outs]): a call's words as bytes, or None where it has none (for tests). */
static PyObject *call_words_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2 || !PyTuple_Check(args[0]) || (nargs == 2 && !PyTuple_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "call_words() takes one or two tuples");
        return NULL;
    }
    if (!configured()) return NULL;
    int64_t words[MAX_WORDS];
    Py_ssize_t n = call_words(args[0], nargs == 2 ? args[1] : NULL, words);
    return n < 0 ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize((const char *)words, n * sizeof *words);
}
