/*
 * Charts as SVG text (issue 24 point 5): the sweeps' accuracy against K,
 * one curve per kind or T (the paper's Figures 5 and 6), and the report's
 * P*(s|q) of the top tuples beside their baseline. Written by hand rather
 * than by a chart library: no script, no font or file to fetch, so the
 * same text is served as chart.svg, inlined into the report page and
 * printed as shown (black text on white; marker shapes as well as colours
 * tell the series apart in grey).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* Fixed size: viewBox lets a page scale it, and text is not measured, so
 * a fixed size keeps the estimates of label widths below honest. */
enum { WIDTH = 720, HEIGHT = 440, LEFT = 72, TOP = 48, BOTTOM = 60, RIGHT = 16, PAD = 6 };
#define CHAR_W	       6.6 /* an average 12 px sans-serif character */
#define LEGEND_CHARS   28  /* longer series names are cut */
#define CATEGORY_CHARS 24  /* longer category names are cut */

/* Okabe-Ito, in an order whose neighbours differ most; its yellow is
 * unreadable as a line on white, so mid grey takes its place. */
static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
				      "#E69F00", "#56B4E9", "#000000", "#7F7F7F"};
#define N_COLORS (sizeof palette / sizeof palette[0])

/* Marker outlines relative to the point: circle, square, triangle, diamond. */
static const char *const shapes[] = {"m-3.5,0a3.5,3.5 0 1,0 7,0a3.5,3.5 0 1,0 -7,0",
				     "m-3.2,-3.2h6.4v6.4h-6.4z", "m0,-4.2l4,7h-8z",
				     "m0,-4.6l4.6,4.6l-4.6,4.6l-4.6,-4.6z"};

struct out {
	char *s;
	size_t len, cap;
	int oom;
};

struct axis {
	double lo, hi, step;   /* the range drawn and the distance between ticks */
	long long first, last; /* the ticks: first * step .. last * step */
};

struct frame {
	double left, top, w, h; /* the plot area */
	struct axis x, y;
	const struct svg_chart *c;
};

/* ---- text --------------------------------------------------------------- */

/* Room for n more bytes and the NUL; 0 once out of memory. */
static int grow(struct out *o, size_t n)
{
	size_t cap = o->cap ? o->cap : 8192;
	char *grown;

	if (o->oom || o->len + n < o->cap)
		return !o->oom;
	while (cap <= o->len + n)
		cap *= 2;
	if (!(grown = realloc(o->s, cap)))
		o->oom = 1;
	o->s = grown ? grown : o->s;
	o->cap = grown ? cap : o->cap;
	return !o->oom;
}

static void put(struct out *o, const char *s, size_t n)
{
	if (!grow(o, n))
		return;
	memcpy(o->s + o->len, s, n);
	o->len += n;
	o->s[o->len] = '\0';
}

static void emit(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Markup and numbers; user text goes through put_text. */
static void emit(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !grow(o, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(o->s + o->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->len += (size_t)n;
}

/* Length of the UTF-8 sequence at s when it is a character XML allows,
 * else 0 (CSV values reach here unchecked: controls, broken sequences,
 * surrogates, U+FFFE and U+FFFF would make the document ill-formed). */
static size_t xml_char_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 ? 4 : 1;
	unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
	unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;

	if (c < 0x20)
		return c == '\t' || c == '\n' || c == '\r';
	if ((c >= 0x80 && c < 0xC2) || c > 0xF4)
		return 0;
	for (size_t i = 1; i < n; i++)
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF))
			return 0;
	if (n == 3 && c == 0xEF && s[1] == 0xBF && s[2] >= 0xBE)
		return 0;
	return n;
}

/* s as XML character data, at most max characters (0: all) and then an
 * ellipsis; what XML cannot hold becomes U+FFFD. Returns the characters
 * written, for layout. */
static size_t put_text(struct out *o, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t chars = 0, n = 1;

	for (; *p; p += n ? n : 1, chars++) {
		const char *e = *p == '&'    ? "&amp;"
				: *p == '<'  ? "&lt;"
				: *p == '>'  ? "&gt;"
				: *p == '"'  ? "&quot;"
				: *p == '\'' ? "&apos;"
					     : NULL;

		if (max && chars == max) {
			put(o, "\xE2\x80\xA6", 3);
			return chars + 1;
		}
		n = xml_char_len(p);
		if (e)
			put(o, e, strlen(e));
		else
			put(o, n ? (const char *)p : "\xEF\xBF\xBD", n ? n : 3);
	}
	return chars;
}

/* Characters put_text would write for s, to size the margins. */
static size_t text_chars(const char *s, size_t max)
{
	struct out sink = {.oom = 1}; /* counts, writes nothing */

	return put_text(&sink, s, max);
}

/* ---- axes --------------------------------------------------------------- */

/* Tick values are i * step, whose rounding error lies beyond 15
 * significant digits: "%.15g" prints 0.30000000000000004 as "0.3", cuts
 * trailing zeros, and v == 0 turns -0 into 0. */
static void tick_label(char *buf, size_t size, double v)
{
	snprintf(buf, size, "%.15g", v == 0 ? 0.0 : v);
}

/* The axis over [lo, hi] (lo > hi: no data) with about five 1-2-5 tick
 * intervals, whole numbers apart if integer (a count such as K has no
 * tick at 2.5); an automatic range is widened to whole ticks, a single
 * value padded on both sides. */
static void axis_make(struct axis *a, double lo, double hi, int fixed, int integer)
{
	double e, f;

	if (!(lo <= hi) || !isfinite(hi - lo)) { /* none, or too far apart to draw */
		lo = 0;
		hi = 1;
	}
	if (lo == hi) {
		double pad = lo != 0 ? fabs(lo) / 2 : 1;

		lo -= pad;
		hi += pad;
	}
	e = floor(log10((hi - lo) / 5));
	f = (hi - lo) / 5 / pow(10, e);
	a->step = (f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10) * pow(10, e);
	a->step = integer ? fmax(a->step, 1) : a->step;
	if (!fixed) {
		lo = floor(lo / a->step + 1e-9) * a->step;
		hi = ceil(hi / a->step - 1e-9) * a->step;
	}
	a->lo = lo;
	a->hi = hi;
	a->first = (long long)ceil(lo / a->step - 1e-6);
	a->last = (long long)floor(hi / a->step + 1e-6);
}

static double px_x(const struct frame *f, double v)
{
	return f->left + (v - f->x.lo) / (f->x.hi - f->x.lo) * f->w;
}

static double px_y(const struct frame *f, double v)
{
	return f->top + f->h - (v - f->y.lo) / (f->y.hi - f->y.lo) * f->h;
}

/* A tick at pixel p of the y axis (vertical) or the x axis: grid line,
 * mark and label, of class ytick or xtick (for tests and a page's styles).
 * Category names are slanted, so that long ones fit. */
static void tick(struct out *o, const struct frame *f, int vertical, double p, const char *label)
{
	double b = f->top + f->h;
	char slant[64] = "";

	if (vertical) {
		emit(o,
		     "<path d=\"M%.1f %.1fH%.1f\" stroke=\"#e0e0e0\"/><path d=\"M%.1f %.1fh-5\" "
		     "stroke=\"#000\"/>\n<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\" "
		     "text-anchor=\"end\">",
		     f->left, p, f->left + f->w, f->left, p, f->left - 8, p + 4);
	} else {
		if (f->c->n_categories)
			snprintf(slant, sizeof slant, " transform=\"rotate(-40 %.1f %.1f)\"", p + 4,
				 b + 14);
		emit(o,
		     "<path d=\"M%.1f %.1fV%.1f\" stroke=\"#e0e0e0\"/><path d=\"M%.1f %.1fv5\" "
		     "stroke=\"#000\"/>\n<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\" "
		     "text-anchor=\"%s\"%s>",
		     p, f->top, b, p, b, slant[0] ? p + 4 : p, slant[0] ? b + 14 : b + 19,
		     slant[0] ? "end" : "middle", slant);
	}
	put_text(o, label, CATEGORY_CHARS);
	emit(o, "</text>\n");
}

static void axis_ticks(struct out *o, const struct frame *f, int vertical)
{
	const struct axis *a = vertical ? &f->y : &f->x;
	char label[48];

	for (long long i = a->first; i <= a->last; i++) {
		double v = (double)i * a->step;

		tick_label(label, sizeof label, v);
		tick(o, f, vertical, vertical ? px_y(f, v) : px_x(f, v), label);
	}
}

/* The axes, their ticks and labels, and the title. */
static void frame_draw(struct out *o, const struct frame *f)
{
	const struct svg_chart *c = f->c;

	emit(o,
	     "<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"16\" "
	     "font-weight=\"bold\">",
	     WIDTH / 2);
	put_text(o, c->title, 0);
	emit(o, "</text>\n");
	axis_ticks(o, f, 1);
	for (size_t i = 0; i < c->n_categories; i++)
		tick(o, f, 0, px_x(f, (double)i), c->categories[i]);
	if (!c->n_categories)
		axis_ticks(o, f, 0);
	emit(o, "<path d=\"M%.1f %.1fV%.1fH%.1f\" fill=\"none\" stroke=\"#000\"/>\n", f->left,
	     f->top, f->top + f->h, f->left + f->w);
	emit(o, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\">",
	     f->left + f->w / 2, HEIGHT - 12);
	put_text(o, c->x_label, 0);
	emit(o,
	     "</text>\n<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\" "
	     "transform=\"rotate(-90 18 %.1f)\">",
	     f->top + f->h / 2, f->top + f->h / 2);
	put_text(o, c->y_label, 0);
	emit(o, "</text>\n");
}

/* ---- series ------------------------------------------------------------- */

static double point_x(const struct svg_series *s, size_t i)
{
	return s->x ? s->x[i] : (double)i;
}

static int point_ok(const struct svg_series *s, size_t i)
{
	return s->y && isfinite(point_x(s, i)) && isfinite(s->y[i]);
}

/* Stroke and fill of series i: colour, and a dashed line once the
 * palette repeats. */
static void series_paint(struct out *o, size_t i, int line)
{
	if (line)
		emit(o,
		     " fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\"%s",
		     palette[i % N_COLORS], i / N_COLORS % 2 ? " stroke-dasharray=\"6,3\"" : "");
	else
		emit(o, " fill=\"%s\"", palette[i % N_COLORS]);
}

/* Series i's line (a new subpath after each skipped point: a gap) and
 * markers, one path each. */
static void series_draw(struct out *o, const struct frame *f, const struct svg_series *s, size_t i)
{
	int prev = 0; /* the point before was drawn */

	if (s->style != SVG_POINTS) {
		emit(o, "<path class=\"line\" d=\"");
		for (size_t k = 0; k < s->n; prev = point_ok(s, k), k++)
			if (point_ok(s, k))
				emit(o, "%s%.1f %.1f", prev ? "L" : "M", px_x(f, point_x(s, k)),
				     px_y(f, s->y[k]));
		emit(o, "\"");
		series_paint(o, i, 1);
		emit(o, "/>\n");
	}
	if (s->style == SVG_LINE)
		return;
	emit(o, "<path class=\"points\" d=\"");
	for (size_t k = 0; k < s->n; k++)
		if (point_ok(s, k))
			emit(o, "M%.1f %.1f%s", px_x(f, point_x(s, k)), px_y(f, s->y[k]),
			     shapes[i % 4]);
	emit(o, "\"");
	series_paint(o, i, 0);
	emit(o, "/>\n");
}

/* The legend right of the plot: swatch and name of each series. */
static void legend(struct out *o, const struct frame *f, const struct svg_series *s, size_t n)
{
	double x = f->left + f->w + 20;

	for (size_t i = 0; i < n; i++) {
		double y = f->top + 10 + 20 * (double)i;

		if (s[i].style != SVG_POINTS) {
			emit(o, "<path d=\"M%.1f %.1fh24\"", x, y);
			series_paint(o, i, 1);
			emit(o, "/>\n");
		}
		if (s[i].style != SVG_LINE) {
			emit(o, "<path d=\"M%.1f %.1f%s\"", x + 12, y, shapes[i % 4]);
			series_paint(o, i, 0);
			emit(o, "/>\n");
		}
		emit(o, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">", x + 32, y + 4);
		put_text(o, s[i].name, LEGEND_CHARS);
		emit(o, "</text>\n");
	}
}

/* ---- the chart ---------------------------------------------------------- */

/* The axes' ranges, from the chart or the data; the legend's width. */
static double frame_fit(struct frame *f, const struct svg_chart *c, const struct svg_series *s,
			size_t n)
{
	double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY, legend_w = 0;

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < s[i].n; k++) {
			if (!point_ok(&s[i], k))
				continue;
			x0 = fmin(x0, point_x(&s[i], k));
			x1 = fmax(x1, point_x(&s[i], k));
			y0 = fmin(y0, s[i].y[k]);
			y1 = fmax(y1, s[i].y[k]);
		}
		legend_w =
		    fmax(legend_w, 52 + CHAR_W * (double)text_chars(s[i].name, LEGEND_CHARS));
	}
	f->c = c;
	if (c->n_categories)
		axis_make(&f->x, -0.5, (double)c->n_categories - 0.5, 1, 0);
	else if (c->x_min < c->x_max)
		axis_make(&f->x, c->x_min, c->x_max, 1, c->x_integer);
	else
		axis_make(&f->x, x0, x1, 0, c->x_integer);
	if (c->y_min < c->y_max)
		axis_make(&f->y, c->y_min, c->y_max, 1, 0);
	else
		axis_make(&f->y, y0, y1, 0, 0);
	return legend_w;
}

/* The plot area: what is left by the title, the legend, the widest y
 * tick label and the category names, slanted at 40 degrees so that they
 * reach down and left (the first one beyond the axis, half a band). */
static void frame_layout(struct frame *f, double legend_w)
{
	const struct svg_chart *c = f->c;
	double ytick = 0, cat = 0, first = 0, room = WIDTH - RIGHT - legend_w;
	double bands = 2 * (double)c->n_categories;
	char label[48];

	for (long long i = f->y.first; i <= f->y.last; i++) {
		tick_label(label, sizeof label, (double)i * f->y.step);
		ytick = fmax(ytick, CHAR_W * (double)strlen(label));
	}
	for (size_t i = 0; i < c->n_categories; i++)
		cat = fmax(cat, CHAR_W * (double)text_chars(c->categories[i], CATEGORY_CHARS));
	if (c->n_categories) { /* left - its reach + (room - left) / bands >= 0 */
		first = 0.77 * CHAR_W * (double)text_chars(c->categories[0], CATEGORY_CHARS);
		first = (bands * first - room) / (bands - 1);
	}
	f->left = fmax(LEFT, fmax(38 + ytick, first));
	f->top = TOP;
	f->w = room - f->left;
	f->h = HEIGHT - TOP - BOTTOM - fmax(0, 0.64 * cat - 16);
}

/* y = x where both axes cover it, for a scatter of two estimates. */
static void diagonal(struct out *o, const struct frame *f)
{
	double lo = fmax(f->x.lo, f->y.lo), hi = fmin(f->x.hi, f->y.hi);

	if (lo < hi)
		emit(
		    o,
		    "<path d=\"M%.1f %.1fL%.1f %.1f\" stroke=\"#888\" stroke-dasharray=\"4,4\"/>\n",
		    px_x(f, lo), px_y(f, lo), px_x(f, hi), px_y(f, hi));
}

char *svg_render(const struct svg_chart *c, const struct svg_series *s, size_t n, size_t *len)
{
	struct out o = {0};
	struct frame f;

	frame_layout(&f, frame_fit(&f, c, s, n));
	emit(&o,
	     "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
	     "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
	     "<title>",
	     WIDTH, HEIGHT, WIDTH, HEIGHT);
	put_text(&o, c->title, 0);
	emit(&o, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", WIDTH, HEIGHT);
	frame_draw(&o, &f);
	/* A nested viewport clips what lies outside fixed ranges, without an
	 * id that could clash when two charts share one HTML page. */
	emit(&o,
	     "<svg x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" viewBox=\"%.1f %.1f %.1f "
	     "%.1f\">\n",
	     f.left - PAD, f.top - PAD, f.w + 2 * PAD, f.h + 2 * PAD, f.left - PAD, f.top - PAD,
	     f.w + 2 * PAD, f.h + 2 * PAD);
	if (c->diagonal)
		diagonal(&o, &f);
	for (size_t i = 0; i < n; i++)
		series_draw(&o, &f, &s[i], i);
	emit(&o, "</svg>\n");
	legend(&o, &f, s, n);
	emit(&o, "</svg>\n");
	if (o.oom) {
		free(o.s);
		return NULL;
	}
	if (len)
		*len = o.len;
	return o.s;
}
