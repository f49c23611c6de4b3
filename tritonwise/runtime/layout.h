/* run_layout(): a new shape of a plain call launched from the record of its call class and stride
 * classes, with no plan; included by launch.c after hit.h (which declares it for serve()).
 *
 * What Python does for such a call in layout_templates.py, done here in integers:
 * analysis.plan.geometry (broadcast, TensorIterator's dim order, dense outputs in that order,
 * collapse), then analysis.plan.retile for the schemes flat, nd and tile2d (the block picked as
 * the scheme picks it, alignment and index width checked against the record's), the index
 * values by codes, and the launch of the kernel compiled for the block and for the classes of
 * the index values Triton specializes on. A call qualifies as layout_templates.plain_call
 * says: plain tensors, none negative or requiring grad; a given output (out0=, in place) of the
 * broadcast shape and without internal overlap, as LayoutTemplates.derive checks it (its
 * overlap with the inputs hit.h's serve() has checked).
 *
 * A reduction along dims (its record's last field a RowRule: dims, keepdim, the row schemes'
 * constants) takes analysis.plan.analyze_rows's geometry instead: the kept dims collapsed (rows)
 * then the reduced ones (columns), outputs dense over the kept dims, of the reduced shape; the
 * schemes row_persistent, row_looped and column_looped, their blocks and tile counts. It gives no
 * outputs, and is refused where the split rule would cut it (a split combines partials in torch).
 *
 * Records come from LayoutTemplates.publish (layout_templates.py, whose LayoutRecord names the
 * fields):
 *   records[call class][stride classes] = [record per layout class], each (out dtypes, device,
 *     cu_launch_kernel, device index, kinds, scheme, m_dim, block choices, small-task tiles,
 *     aligned, index kind "i" or "l", max grid, codes, scratch slots, specialized positions,
 *     kernels, RowRule or None)
 * The call class is the signature without sizes and strides, each tensor's entry (dtype, rank,
 * device, aligned), then, where the call gives outputs, per output None or ("out", dtype, rank,
 * device, aligned); the stride classes one string per operand ("0", "1", "s" per task dim).
 * `codes` say what each index argument is: (0, d, 0) the extent of task dim d, (1, o, d) operand
 * o's stride along it (inputs, then outputs), (2, c, 0) the scheme's c-th tile count. NULL
 * without an exception: not served. */

#define MAX_OPERANDS 16
#define MAX_VALUES 128
#define LAYOUT_FIELDS 17
#define RULE_FIELDS 7 /* layout_templates.RowRule */

enum { SCHEME_FLAT = 0, SCHEME_ND = 1, SCHEME_TILE2D = 2, SCHEME_ROW_PERSISTENT = 3, SCHEME_ROW_LOOPED = 4,
       SCHEME_COLUMN_LOOPED = 5 };

typedef struct {
    int n_in, n_out, n_ops, rank, task_rank;
    long long shape[MAX_RANK];                  /* the broadcast shape */
    long long strides[MAX_OPERANDS][MAX_RANK];  /* each input's strides over it (broadcast_strides), then each output's */
    int given[MAX_OPERANDS];                    /* per output: given (its strides in given_strides) or allocated */
    long long given_strides[MAX_OPERANDS][MAX_RANK];
    int out_rank, n_rows;                       /* the allocated outputs' rank; kept task dims of a reduction */
    long long out_shape[MAX_RANK], out_strides[MAX_RANK]; /* allocated outputs' shape and strides */
    long long task[MAX_RANK];                   /* the collapsed task, outer to inner */
    long long task_strides[MAX_OPERANDS][MAX_RANK];
} LayoutTask;

static long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

/* A plain tensor's fields (dtype, shape, strides, device, aligned, negative, requires grad: a
 * signature's tensor entry, or a given output's without its leading type): its sizes and strides
 * into `sizes`/`strides`, its rank returned; -1 where it is not a plain tensor the C path takes. */
static int read_tensor(PyObject *const *f, long long *sizes, long long *strides) {
    Py_ssize_t rank = PyObject_Length(f[1]);
    if (f[5] != Py_False || f[6] != Py_False || rank < 0 || rank > MAX_RANK || !PyTuple_Check(f[2]) ||
        PyTuple_GET_SIZE(f[2]) != rank)
        return -1;
    for (Py_ssize_t d = 0; d < rank; ++d) {
        PyObject *size = PySequence_GetItem(f[1], d);
        sizes[d] = size == NULL ? -1 : PyLong_AsLongLong(size);
        Py_XDECREF(size);
        strides[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(f[2], d));
        if (sizes[d] < 0 || PyErr_Occurred()) return -1;
    }
    return (int)rank;
}

/* The call class of signature `key` (its first `n_args` entries the arguments', the rest given
 * outputs') into `parts` (layout_templates._call_class) and its tensors, broadcast, into `t`: the
 * inputs' strides, and each given output's, which must have the inputs' broadcast shape and no
 * dim of size > 1 with stride 0 (has_internal_overlap). 0 where the call has no plain tensor input, or
 * its tensors do not broadcast, or an output is not such a tensor. */
static int read_operands(PyObject *key, Py_ssize_t n_args, PyObject *parts, LayoutTask *t) {
    long long sizes[MAX_OPERANDS][MAX_RANK], raw[MAX_OPERANDS][MAX_RANK];
    int ranks[MAX_OPERANDS], output_of[MAX_OPERANDS], n = 0; /* per tensor read: -1 an input, else its output */
    t->n_in = t->n_out = t->rank = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(key); ++k) {
        PyObject *e = PyTuple_GET_ITEM(key, k), *part;
        int output = k >= n_args, tensor = !output && PyTuple_CheckExact(e) && PyTuple_GET_SIZE(e) == 7;
        if (output) {
            if (t->n_out == MAX_OPERANDS) return 0;
            tensor = PyTuple_CheckExact(e) && PyTuple_GET_SIZE(e) == 8 && PyTuple_GET_ITEM(e, 0) == tensor_type;
            t->given[t->n_out++] = tensor;
            if (!tensor && e != (PyObject *)Py_TYPE(Py_None)) return 0;
        }
        if (tensor) {
            PyObject *const *f = &PyTuple_GET_ITEM(e, output);
            if (n == MAX_OPERANDS || (ranks[n] = read_tensor(f, sizes[n], raw[n])) < 0) return 0;
            output_of[n] = output ? t->n_out - 1 : -1;
            if (!output) t->rank = ranks[n] > t->rank ? ranks[n] : t->rank;
            t->n_in += !output;
            part = output ? Py_BuildValue("(sOiOO)", "out", f[0], ranks[n], f[3], f[4])
                          : Py_BuildValue("(OiOO)", f[0], ranks[n], f[3], f[4]);
            n++;
            if (part == NULL) return 0;
        } else if (output) {
            part = Py_NewRef(Py_None);
        } else if (PyTuple_Check(e)) {
            return 0; /* a subclass or a StridedBuffer: the general path */
        } else {
            part = Py_NewRef(e);
        }
        PyTuple_SET_ITEM(parts, k, part);
    }
    for (int d = 0; d < t->rank; ++d) t->shape[d] = 1;
    for (int i = 0; i < t->n_in; ++i) { /* analysis.broadcast: the inputs' shapes (inputs come first), */
        int lead = t->rank - ranks[i];
        for (int d = lead; d < t->rank; ++d) {
            long long size = sizes[i][d - lead];
            if (size != 1 && t->shape[d] != 1 && size != t->shape[d]) return 0;
            if (size != 1) t->shape[d] = size;
        }
    }
    for (int i = 0; i < n; ++i) { /* then strides over the shape; a given output must have it */
        int lead = t->rank - ranks[i];
        long long *strides = output_of[i] < 0 ? t->strides[i] : t->given_strides[output_of[i]];
        if (lead < 0) return 0;
        for (int d = 0; d < t->rank; ++d) {
            long long size = d < lead ? 1 : sizes[i][d - lead];
            strides[d] = d < lead || (size == 1 && t->shape[d] != 1) ? 0 : raw[i][d - lead];
            if (output_of[i] >= 0 && (lead || size != t->shape[d] || (size > 1 && strides[d] == 0))) return 0;
        }
    }
    return t->n_in > 0;
}

/* analysis.layout._compare over the given outputs' strides, then the inputs': 1 to move dim a
 * outside dim b, -1 to keep, 0 unknown. */
static int compare_dims(const LayoutTask *t, int a, int b) {
    for (int k = 0; k < t->n_out + t->n_in; ++k) {
        if (k < t->n_out && !t->given[k]) continue;
        const long long *strides = k < t->n_out ? t->given_strides[k] : t->strides[k - t->n_out];
        long long sa = strides[a], sb = strides[b];
        if (sa == 0 || sb == 0) continue;
        if (magnitude(sa) != magnitude(sb)) return magnitude(sa) > magnitude(sb) ? 1 : -1;
        if (t->shape[a] > t->shape[b]) return 1;
    }
    return 0;
}

/* The number of elements of the broadcast shape; 0 where it is empty or has 2**62 or more. */
static long long checked_numel(const LayoutTask *t) {
    long long numel = 1;
    for (int d = 0; d < t->rank; ++d) {
        if (t->shape[d] == 0 || numel > (1LL << 62) / t->shape[d]) return 0;
        numel *= t->shape[d];
    }
    return numel;
}

/* analysis.layout.dim_order: the dims inner to outer into `order`. */
static void dim_order(const LayoutTask *t, int *order) {
    for (int d = 0; d < t->rank; ++d) order[d] = t->rank - 1 - d;
    for (int i = 1; i < t->rank; ++i) {
        int moving = i;
        for (int j = i - 1; j >= 0; --j) {
            int verdict = compare_dims(t, order[j], order[moving]);
            if (verdict > 0) {
                int swap = order[j];
                order[j] = order[moving];
                order[moving] = swap;
                moving = j;
            } else if (verdict < 0) break;
        }
    }
}

/* analysis.layout.collapse of the dims `order` (inner to outer) over every operand, appended to
 * the task at dim `at`, outer to inner; an empty group becomes one dim of extent 1 and stride
 * `fill` (plan._collapsed_group). The number of task dims it added. */
static int collapse_group(LayoutTask *t, const int *order, int n_order, long long fill, int at) {
    long long sizes[MAX_RANK], merged[MAX_OPERANDS][MAX_RANK]; /* inner to outer */
    int n = 0;
    for (int k = 0; k < n_order; ++k) {
        int d = order[k];
        if (t->shape[d] == 1) continue;
        int contiguous = n > 0;
        for (int o = 0; contiguous && o < t->n_ops; ++o)
            contiguous = merged[o][n - 1] * sizes[n - 1] == t->strides[o][d];
        if (contiguous) {
            sizes[n - 1] *= t->shape[d];
            continue;
        }
        sizes[n] = t->shape[d];
        for (int o = 0; o < t->n_ops; ++o) merged[o][n] = t->strides[o][d];
        n++;
    }
    if (n == 0) {
        t->task[at] = 1;
        for (int o = 0; o < t->n_ops; ++o) t->task_strides[o][at] = fill;
        return 1;
    }
    for (int g = 0; g < n; ++g) {
        t->task[at + g] = sizes[n - 1 - g];
        for (int o = 0; o < t->n_ops; ++o) t->task_strides[o][at + g] = merged[o][n - 1 - g];
    }
    return n;
}

/* Outputs: the given ones' strides, the others `allocated` (over the broadcast shape). */
static int place_outputs(LayoutTask *t, int n_out, const long long *allocated) {
    if (t->n_out != 0 && t->n_out != n_out) return 0;
    for (int o = t->n_out; o < n_out; ++o) t->given[o] = 0;
    t->n_out = n_out;
    t->n_ops = t->n_in + n_out;
    if (t->n_ops > MAX_OPERANDS) return 0;
    for (int o = 0; o < n_out; ++o)
        for (int d = 0; d < t->rank; ++d) t->strides[t->n_in + o][d] = t->given[o] ? t->given_strides[o][d] : allocated[d];
    return 1;
}

/* analysis.plan.geometry: dim order, the allocated outputs' dense strides, collapse, for a call
 * of `n_out` outputs (t->n_out of them read from its signature: none, or all of them). 0 where
 * the task is empty, of rank 0, or has 2**62 elements or more. */
static int collapse_layout(LayoutTask *t, int n_out) {
    int order[MAX_RANK]; /* inner to outer */
    if (!checked_numel(t)) return 0;
    dim_order(t, order);
    long long step = 1;
    for (int k = 0; k < t->rank; ++k) {
        t->out_strides[order[k]] = step;
        step *= t->shape[order[k]];
    }
    t->out_rank = t->rank;
    for (int d = 0; d < t->rank; ++d) t->out_shape[d] = t->shape[d];
    if (!place_outputs(t, n_out, t->out_strides)) return 0;
    int n = 0;
    for (int k = 0; k < t->rank; ++k) n += t->shape[order[k]] != 1;
    t->n_rows = -1;
    t->task_rank = n ? collapse_group(t, order, t->rank, 0, 0) : 0;
    return n > 0;
}

/* The extents of the task's rows (dims before m_dim) and columns (from m_dim on), multiplied. */
static void rows_and_cols(const LayoutTask *t, int m_dim, long long *rows, long long *cols) {
    *rows = *cols = 1;
    for (int g = 0; g < t->task_rank; ++g) *(g < m_dim ? rows : cols) *= t->task[g];
}

/* analysis.plan.split_parts with the constants of `rule` (RowRule.split): 1 where no split. */
static long long split_parts(const LayoutTask *t, PyObject *rule) {
    long long c[5], rows, cols, parts = 1;
    for (int k = 0; k < 5; ++k) c[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(rule, k));
    rows_and_cols(t, t->n_rows, &rows, &cols);
    if (rows > c[0] || !rows || (rows >= c[1] && cols < c[2])) return 1;
    while (parts * 2 * rows <= c[3] && cols / (parts * 2) >= c[4] && t->task[t->n_rows] % (parts * 2) == 0) parts *= 2;
    return parts;
}

/* Whether `rule` has RowRule's shape: its split None or 5 constants, its pipelined steps (at
 * most rows, at least cols, width) a tuple of 3-tuples. */
static int is_row_rule(PyObject *rule) {
    if (!PyTuple_Check(rule) || PyTuple_GET_SIZE(rule) != RULE_FIELDS) return 0;
    PyObject *split = PyTuple_GET_ITEM(rule, 5), *steps = PyTuple_GET_ITEM(rule, 6);
    if (split != Py_None && (!PyTuple_Check(split) || PyTuple_GET_SIZE(split) != 5)) return 0;
    if (!PyTuple_Check(steps)) return 0;
    for (Py_ssize_t s = 0; s < PyTuple_GET_SIZE(steps); ++s) {
        PyObject *step = PyTuple_GET_ITEM(steps, s);
        if (!PyTuple_Check(step) || PyTuple_GET_SIZE(step) != 3) return 0;
    }
    return 1;
}

/* analysis.plan.analyze_rows for a call giving no outputs, by RowRule `rule`: the kept dims
 * (collapsed, the rows) then the reduced ones (collapsed, the columns), the outputs dense over
 * the kept dims in the task's order, of the reduced result's shape. 0 where the task is empty,
 * a dim of the rule is not one of the shape's, or the rule's split would cut it. */
static int row_layout(LayoutTask *t, int n_out, PyObject *rule) {
    PyObject *dims = PyTuple_GET_ITEM(rule, 0), *split = PyTuple_GET_ITEM(rule, 5);
    int keepdim = PyTuple_GET_ITEM(rule, 1) == Py_True, reduced[MAX_RANK] = {0}, order[MAX_RANK];
    int kept_order[MAX_RANK], reduced_order[MAX_RANK], n_kept = 0, n_reduced = 0;
    long long full[MAX_RANK], over_task[MAX_RANK];
    if (t->n_out || !is_row_rule(rule) || !PyTuple_Check(dims) || !checked_numel(t)) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(dims); ++k) {
        long d = PyLong_AsLong(PyTuple_GET_ITEM(dims, k));
        if (d < 0 || d >= t->rank) return 0;
        reduced[d] = 1;
    }
    dim_order(t, order);
    for (int k = 0; k < t->rank; ++k) {
        if (reduced[order[k]]) reduced_order[n_reduced++] = order[k];
        else kept_order[n_kept++] = order[k];
    }
    long long step = 1; /* plan._allocated: kept dims dense in the task's order, reduced ones after */
    for (int k = 0; k < n_kept; ++k) {
        full[kept_order[k]] = step;
        step *= t->shape[kept_order[k]];
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(dims); ++k) full[PyLong_AsLong(PyTuple_GET_ITEM(dims, k))] = step;
    t->out_rank = 0;
    for (int d = 0; d < t->rank; ++d) {
        over_task[d] = reduced[d] ? 0 : full[d];
        if (reduced[d] && !keepdim) continue;
        t->out_shape[t->out_rank] = reduced[d] ? 1 : t->shape[d];
        t->out_strides[t->out_rank++] = full[d];
    }
    if (!place_outputs(t, n_out, over_task)) return 0;
    t->n_rows = collapse_group(t, kept_order, n_kept, 1, 0);
    t->task_rank = t->n_rows + collapse_group(t, reduced_order, n_reduced, 0, t->n_rows);
    return !PyErr_Occurred() && (split == Py_None || split_parts(t, split) == 1);
}

/* The task's stride classes (analysis.tiling.operand_classes), a new tuple of str. */
static PyObject *stride_classes(const LayoutTask *t) {
    PyObject *classes = PyTuple_New(t->n_ops);
    char text[MAX_RANK + 1];
    for (int o = 0; classes != NULL && o < t->n_ops; ++o) {
        for (int g = 0; g < t->task_rank; ++g) {
            long long s = t->task_strides[o][g];
            text[g] = s == 0 ? '0' : s == 1 ? '1' : 's';
        }
        PyObject *item = PyUnicode_FromStringAndSize(text, t->task_rank);
        if (item == NULL) Py_CLEAR(classes);
        else PyTuple_SET_ITEM(classes, o, item);
    }
    return classes;
}

/* schemes.base.fit: the largest of `sizes` whose tiles along `extent` are over half used, else the
 * smallest. */
static long long fit(long long extent, const long long *sizes, int n) {
    long long best = -1, smallest = -1;
    for (int k = 0; k < n; ++k) {
        if (2 * extent > ceil_div(extent, sizes[k]) * sizes[k] && sizes[k] > best) best = sizes[k];
        if (smallest < 0 || sizes[k] < smallest) smallest = sizes[k];
    }
    return best > 0 ? best : smallest;
}

/* The scheme's tile counts (Scheme.counts, in count_params order) for `block`; how many. */
static int tile_counts(const LayoutTask *t, int scheme, int m_dim, const long long *block, long long *counts) {
    int inner = t->task_rank - 1;
    if (scheme >= SCHEME_ROW_PERSISTENT) { /* num_rows, num_cols, num_tiles */
        rows_and_cols(t, m_dim, &counts[0], &counts[1]);
        counts[2] = ceil_div(counts[0], block[0]);
        return 3;
    }
    if (scheme == SCHEME_FLAT) {
        counts[0] = ceil_div(t->task[0], block[0]);
        return 1;
    }
    long long rest = 1;
    for (int g = 0; g < inner; ++g) rest *= g == m_dim && scheme == SCHEME_TILE2D ? 1 : t->task[g];
    counts[1] = ceil_div(t->task[inner], block[1]);
    if (scheme == SCHEME_ND) {
        counts[0] = rest;
        counts[2] = ceil_div(rest, block[0]) * counts[1];
    } else {
        counts[0] = ceil_div(t->task[m_dim], block[0]);
        counts[2] = rest * counts[0] * counts[1];
    }
    return 3;
}

static int has_width(const long long *bn, Py_ssize_t n, long long width) {
    for (Py_ssize_t k = 0; k < n; ++k)
        if (bn[k] == width) return 1;
    return 0;
}

/* The row schemes' pick_block (RowPersistent, RowLooped, ColumnLooped) with RowRule `rule`'s
 * constants, among the n blocks (bm, bn). */
static void pick_row_block(const LayoutTask *t, int scheme, int m_dim, const long long *bm, const long long *bn,
                           Py_ssize_t n, PyObject *rule, long long block[2]) {
    long long rows, cols, long_row = PyLong_AsLongLong(PyTuple_GET_ITEM(rule, 3));
    long long min_programs = PyLong_AsLongLong(PyTuple_GET_ITEM(rule, 4));
    PyObject *pipelined = PyTuple_GET_ITEM(rule, 6);
    rows_and_cols(t, m_dim, &rows, &cols);
    Py_ssize_t k = 0, fallback = n - 1;
    if (scheme == SCHEME_ROW_PERSISTENT) {
        while (k < n && bn[k] < cols) ++k;
    } else if (scheme == SCHEME_ROW_LOOPED) {
        long long width = cols >= long_row ? 2048 : 1024;
        for (Py_ssize_t s = 0; s < PyTuple_GET_SIZE(pipelined); ++s) { /* RowLooped.pick_block's steps */
            PyObject *step = PyTuple_GET_ITEM(pipelined, s);
            long long max_rows = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 0));
            long long min_cols = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 1));
            long long wide = PyLong_AsLongLong(PyTuple_GET_ITEM(step, 2));
            if (rows <= max_rows && cols >= min_cols && has_width(bn, n, wide)) width = wide;
        }
        while (k < n && bn[k] != width) ++k;
        fallback = 0;
    } else {
        while (k < n && ceil_div(rows, bm[k]) < min_programs && bn[k] < cols) ++k;
    }
    if (k == n) k = fallback;
    block[0] = bm[k];
    block[1] = bn[k];
}

/* The block the scheme picks among `choices` (Flat, Nd, Tile2d.pick_block, and the row schemes'
 * with RowRule `rule`); 0 where none. */
static int pick_block(const LayoutTask *t, int scheme, int m_dim, PyObject *choices, long long small, PyObject *rule,
                      long long block[2]) {
    long long bm[MAX_VALUES], bn[MAX_VALUES], with[MAX_VALUES], counts[3];
    Py_ssize_t n = PyTuple_GET_SIZE(choices);
    if (n < 1 || n > MAX_VALUES) return 0;
    for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject *choice = PyTuple_GET_ITEM(choices, k);
        if (!PyTuple_Check(choice) || PyTuple_GET_SIZE(choice) != (scheme == SCHEME_FLAT ? 1 : 2)) return 0;
        bm[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(choice, 0));
        bn[k] = scheme == SCHEME_FLAT ? bm[k] : PyLong_AsLongLong(PyTuple_GET_ITEM(choice, 1));
        if (bm[k] < 1 || bn[k] < 1) return 0;
    }
    if (scheme == SCHEME_FLAT) {
        block[0] = bm[0];
        return 1;
    }
    if (scheme >= SCHEME_ROW_PERSISTENT) {
        pick_row_block(t, scheme, m_dim, bm, bn, n, rule, block);
        return !PyErr_Occurred();
    }
    long long n_col = fit(t->task[t->task_rank - 1], bn, (int)n);
    int m = 0, first = -1, shortest = -1;
    for (Py_ssize_t k = 0; k < n; ++k) {
        if (bn[k] != n_col) continue;
        with[m++] = bm[k];
        if (first < 0) first = (int)k;
        if (shortest < 0 || bm[k] < bm[shortest]) shortest = (int)k;
    }
    if (first < 0) return 0;
    long long rows = scheme == SCHEME_TILE2D ? fit(t->task[m_dim], with, m) : bm[first];
    block[1] = n_col;
    block[0] = rows;
    tile_counts(t, scheme, m_dim, block, counts);
    if (counts[2] >= small) return 1;
    if (scheme == SCHEME_ND) { /* a small task: Nd's shortest rows, Tile2d's smallest tile */
        block[0] = bm[shortest];
        return 1;
    }
    int least = 0;
    for (Py_ssize_t k = 1; k < n; ++k) {
        long long area = bm[k] * bn[k], best = bm[least] * bn[least];
        if (area < best || (area == best && (bm[k] < bm[least] || (bm[k] == bm[least] && bn[k] < bn[least]))))
            least = (int)k;
    }
    block[0] = bm[least];
    block[1] = bn[least];
    return 1;
}

/* analysis.tiling.is_aligned for the scheme's masked dims (the innermost, and m_dim and `also`
 * where not -1: Scheme.aligned_dims), and index_bits (1: 64-bit). */
static int is_aligned_task(const LayoutTask *t, int m_dim, int also) {
    if (t->task[t->task_rank - 1] % 16 != 0 || (m_dim >= 0 && t->task[m_dim] % 16 != 0)) return 0;
    if (also >= 0 && t->task[also] % 16 != 0) return 0;
    for (int o = 0; o < t->n_ops; ++o)
        for (int g = 0; g < t->task_rank; ++g) {
            long long s = t->task_strides[o][g];
            if (s != 0 && s != 1 && s % 16 != 0) return 0;
        }
    return 1;
}

static int needs_wide_index(const LayoutTask *t, const long long *block, int n_block) {
    long long numel = 1, area = 1, reach = 0;
    for (int g = 0; g < t->task_rank; ++g) numel *= t->task[g];
    for (int k = 0; k < n_block; ++k) area *= block[k];
    for (int o = 0; o < t->n_ops; ++o) {
        long long sum = 0;
        for (int g = 0; g < t->task_rank; ++g) sum += (t->task[g] - 1) * magnitude(t->task_strides[o][g]);
        reach = sum > reach ? sum : reach;
    }
    return numel + area > INT32_MAX || reach > INT32_MAX;
}

/* The index values of the record's `codes` into `values`; 0 where a code is out of range. */
static int index_values(const LayoutTask *t, PyObject *codes, const long long *counts, int n_counts,
                        long long *values) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(codes); ++k) {
        PyObject *code = PyTuple_GET_ITEM(codes, k);
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(code, 0)), a = PyLong_AsLong(PyTuple_GET_ITEM(code, 1));
        long b = PyLong_AsLong(PyTuple_GET_ITEM(code, 2));
        if (kind == 0 && a >= 0 && a < t->task_rank) values[k] = t->task[a];
        else if (kind == 1 && a >= 0 && a < t->n_ops && b >= 0 && b < t->task_rank) values[k] = t->task_strides[a][b];
        else if (kind == 2 && a >= 0 && a < n_counts) values[k] = counts[a];
        else return 0;
    }
    return !PyErr_Occurred();
}

/* The kernel of `block` and of the classes (divisible by 16, equal to 1) of the index values at
 * the record's specialized `positions`: (function, threads, shared), borrowed, or NULL. */
static PyObject *kernel_for(PyObject *kernels, PyObject *positions, const long long *values, Py_ssize_t n_values,
                            const long long *block, int n_block) {
    PyObject *classes = PyTuple_New(PyTuple_GET_SIZE(positions));
    for (Py_ssize_t k = 0; classes != NULL && k < PyTuple_GET_SIZE(positions); ++k) {
        long p = PyLong_AsLong(PyTuple_GET_ITEM(positions, k));
        PyObject *c = p < 0 || p >= n_values ? NULL
            : Py_BuildValue("(OO)", values[p] % 16 == 0 ? Py_True : Py_False, values[p] == 1 ? Py_True : Py_False);
        if (c == NULL) Py_CLEAR(classes);
        else PyTuple_SET_ITEM(classes, k, c);
    }
    if (classes == NULL) return NULL;
    PyObject *key = n_block == 1 ? Py_BuildValue("(LN)", block[0], classes)
                                 : Py_BuildValue("(LLN)", block[0], block[1], classes);
    PyObject *kernel = key == NULL ? NULL : PyDict_GetItemWithError(kernels, key);
    Py_XDECREF(key);
    return kernel != NULL && PyTuple_Check(kernel) && PyTuple_GET_SIZE(kernel) == 3 ? kernel : NULL;
}

/* Whether the record's scheme (code `scheme`, tiled or split dim `m_dim`, RowRule `rule` for a row
 * scheme) is the one the analysis chooses for task `t`, as far as the stride classes (equal to the
 * record's) leave it open: a row scheme's split dim, and row_persistent against row_looped by the
 * reduced extent (column_looped follows from the classes alone). */
static int scheme_fits(const LayoutTask *t, int scheme, int m_dim, PyObject *rule) {
    if (scheme < SCHEME_FLAT || scheme > SCHEME_COLUMN_LOOPED) return 0;
    if (scheme < SCHEME_ROW_PERSISTENT)
        return t->n_rows < 0 && (scheme == SCHEME_FLAT) == (t->task_rank == 1) &&
               (scheme != SCHEME_TILE2D || (m_dim >= 0 && m_dim < t->task_rank - 1));
    if (!is_row_rule(rule) || m_dim != t->n_rows) return 0;
    long long rows, cols, persistent_cols = PyLong_AsLongLong(PyTuple_GET_ITEM(rule, 2));
    rows_and_cols(t, m_dim, &rows, &cols);
    if (scheme == SCHEME_ROW_PERSISTENT) return cols <= persistent_cols;
    return scheme == SCHEME_COLUMN_LOOPED || cols > persistent_cols;
}

/* The record's launch of task `t` on `args` and the outputs `given` (NULL, or one per output), or NULL. */
static PyObject *launch_layout(const LayoutTask *t, PyObject *r, PyObject *args, PyObject *given) {
    PyObject *const *f = &PyTuple_GET_ITEM(r, 0);
    int scheme = (int)PyLong_AsLong(f[5]), m_dim = (int)PyLong_AsLong(f[6]);
    long long small = PyLong_AsLongLong(f[8]), max_grid = PyLong_AsLongLong(f[11]), scratch = PyLong_AsLongLong(f[13]);
    const char *index_kind = PyUnicode_AsUTF8(f[10]);
    PyObject *codes = f[12];
    Py_ssize_t n_values = PyTuple_GET_SIZE(codes);
    int n_block = scheme == SCHEME_FLAT ? 1 : 2, rows = scheme >= SCHEME_ROW_PERSISTENT;
    long long block[2], counts[3], values[MAX_VALUES];
    if (PyErr_Occurred() || index_kind == NULL || scratch < 0 || n_values + scratch > MAX_VALUES ||
        !scheme_fits(t, scheme, m_dim, f[16]) || PyErr_Occurred())
        return NULL;
    int masked = scheme == SCHEME_TILE2D || rows ? m_dim : -1, also = scheme == SCHEME_COLUMN_LOOPED ? m_dim - 1 : -1;
    if (!pick_block(t, scheme, masked, f[7], small, f[16], block)) return NULL;
    int n_counts = tile_counts(t, scheme, m_dim, block, counts);
    int aligned = is_aligned_task(t, masked, also);
    if (aligned != (f[9] == Py_True) || needs_wide_index(t, block, n_block) != (index_kind[0] == 'l')) return NULL;
    if (!index_values(t, codes, counts, n_counts, values)) return NULL;
    PyObject *kernel = kernel_for(f[15], f[14], values, n_values, block, n_block);
    if (kernel == NULL) return NULL;
    PyObject *fixed = PyBytes_FromStringAndSize(NULL, 8 * (n_values + scratch));
    if (fixed == NULL) return NULL;
    char *slots = PyBytes_AS_STRING(fixed);
    memset(slots, 0, 8 * (n_values + scratch));
    for (Py_ssize_t k = 0; k < n_values; ++k) {
        if (index_kind[0] == 'i') {
            int32_t v = (int32_t)values[k];
            memcpy(slots + 8 * k, &v, 4);
        } else memcpy(slots + 8 * k, &values[k], 8);
    }
    PyObject *shape = PyTuple_New(t->out_rank), *strides = PyTuple_New(t->out_rank), *result = NULL;
    for (int d = 0; shape != NULL && strides != NULL && d < t->out_rank; ++d) {
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(t->out_shape[d]));
        PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(t->out_strides[d]));
    }
    long long num_tiles = counts[n_counts - 1], grid = num_tiles < max_grid ? num_tiles : max_grid;
    PyObject *fields[3] = {PyTuple_GET_ITEM(kernel, 0), PyTuple_GET_ITEM(kernel, 1), PyTuple_GET_ITEM(kernel, 2)};
    if (shape != NULL && strides != NULL && !PyErr_Occurred())
        result = launch_planless(shape, strides, f[0], f[1], f[2], fields, grid, f[3], f[4], fixed, args, given);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_DECREF(fixed);
    return result;
}

/* The k-th record of `entry` (a list of records, one per layout class), borrowed, or NULL. */
static PyObject *record_at(PyObject *entry, Py_ssize_t k) {
    PyObject *r = PyList_Check(entry) && k < PyList_GET_SIZE(entry) ? PyList_GET_ITEM(entry, k) : NULL;
    return r != NULL && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == LAYOUT_FIELDS ? r : NULL;
}

static PyObject *run_layout(PyObject *records, PyObject *key, PyObject *args, PyObject *given) {
    LayoutTask t;
    PyObject *parts = PyTuple_New(PyTuple_GET_SIZE(key)), *by_classes = NULL, *classes = NULL, *result = NULL;
    if (parts == NULL || !read_operands(key, PyTuple_GET_SIZE(args), parts, &t)) goto done;
    by_classes = Py_XNewRef(PyDict_GetItemWithError(records, parts));
    if (by_classes == NULL || !PyDict_Check(by_classes) || !PyDict_GET_SIZE(by_classes)) goto done;
    Py_ssize_t position = 0;
    PyObject *any_key, *entry;
    PyDict_Next(by_classes, &position, &any_key, &entry); /* every record of the class has its outputs */
    PyObject *any = record_at(entry, 0);
    if (any == NULL) goto done;
    int n_out = (int)PyTuple_GET_SIZE(PyTuple_GET_ITEM(any, 0)); /* a reduction along dims: its RowRule */
    PyObject *rule = PyTuple_GET_ITEM(any, LAYOUT_FIELDS - 1);
    if (!(rule == Py_None ? collapse_layout(&t, n_out) : PyTuple_Check(rule) && row_layout(&t, n_out, rule))) goto done;
    classes = stride_classes(&t);
    entry = classes == NULL ? NULL : PyDict_GetItemWithError(by_classes, classes);
    Py_XINCREF(entry); /* a list another thread may append to while a launch releases the GIL */
    for (Py_ssize_t k = 0; entry != NULL && result == NULL; ++k) {
        PyObject *r = record_at(entry, k); /* the records' layout classes differ: at most one fits */
        if (r == NULL) break;
        Py_INCREF(r);
        result = launch_layout(&t, r, args, given);
        Py_DECREF(r);
        if (result == NULL) PyErr_Clear();
    }
    Py_XDECREF(entry);
done:
    Py_XDECREF(classes);
    Py_XDECREF(by_classes);
    Py_XDECREF(parts);
    if (result == NULL) PyErr_Clear();
    return result;
}
