/* Numbers printed as JavaScript prints them: the reference runs on
 * JavaScript, so an integer is a double and String(x) uses the shortest
 * digits that read back as x (ECMAScript Number::toString). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_internal.h"

/* The shortest decimal digits of |x| (x finite, non-zero) and the position
 * of the decimal point after the first `point` digits. */
static int shortest_digits(double x, char digits[20], int *point)
{
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
        if (strtod(tmp, NULL) == x || prec == 17) break;
    }
    /* tmp is "d.ddde±XX" */
    int k = 0;
    const char *p = tmp;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[k++] = *p;
    int exp10 = atoi(p + 1);
    while (k > 1 && digits[k - 1] == '0') k--;
    digits[k] = 0;
    *point = exp10 + 1;
    return k;
}

size_t ej_js_number(double x, char out[EJ_NUMBER_MAX])
{
    if (isnan(x)) return (size_t)snprintf(out, EJ_NUMBER_MAX, "NaN");
    if (isinf(x)) return (size_t)snprintf(out, EJ_NUMBER_MAX, x < 0 ? "-Infinity" : "Infinity");
    if (x == 0) return (size_t)snprintf(out, EJ_NUMBER_MAX, "0");
    char d[20];
    int n;
    int k = shortest_digits(fabs(x), d, &n);
    size_t o = 0;
    if (x < 0) out[o++] = '-';
    if (k <= n && n <= 21) {
        memcpy(out + o, d, (size_t)k), o += (size_t)k;
        for (int i = k; i < n; i++) out[o++] = '0';
    } else if (0 < n && n <= 21) {
        memcpy(out + o, d, (size_t)n), o += (size_t)n;
        out[o++] = '.';
        memcpy(out + o, d + n, (size_t)(k - n)), o += (size_t)(k - n);
    } else if (-6 < n && n <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -n; i++) out[o++] = '0';
        memcpy(out + o, d, (size_t)k), o += (size_t)k;
    } else {
        out[o++] = d[0];
        if (k > 1) {
            out[o++] = '.';
            memcpy(out + o, d + 1, (size_t)(k - 1)), o += (size_t)(k - 1);
        }
        o += (size_t)snprintf(out + o, EJ_NUMBER_MAX - o, "e%c%d", n - 1 < 0 ? '-' : '+',
                              abs(n - 1));
    }
    out[o] = 0;
    return o;
}

size_t ej_py_float(double x, char out[EJ_NUMBER_MAX])
{
    /* FloatValue.toString: -0 is "-0.0", a whole number gets ".0" through
     * toFixed(1) (exact digits below 1e21), anything else is String(x). */
    if (x == 0 && signbit(x)) return (size_t)snprintf(out, EJ_NUMBER_MAX, "-0.0");
    if (isfinite(x) && x == floor(x)) {
        if (fabs(x) < 1e21) {
            int n = snprintf(out, EJ_NUMBER_MAX, "%.1f", x);
            if (n > 0 && n < EJ_NUMBER_MAX) return (size_t)n;
        }
    }
    return ej_js_number(x, out);
}
