/*
 * figures.c - percentiles and medians of the latencies and CPU measured (see fanout.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include "fanout.h"

int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array, in ms. */
double percentile_ms(const int64_t *sorted, int n, double p)
{
    int rank = (int)((p / 100.0) * n + 0.999999);
    if (rank < 1) rank = 1;
    return sorted[rank - 1] / 1e6;
}

double median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_double);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}
