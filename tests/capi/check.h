/* The check helpers of the C API test programs (C89): each check counts as passed or failed and
 * prints the failing line; a program prints "N passed, N failed" last (sn_test_report) and exits
 * non-zero on any failure. Included by one translation unit per program. */
#ifndef SINTER_TESTS_CAPI_CHECK_H
#define SINTER_TESTS_CAPI_CHECK_H

#include <stdio.h>
#include <string.h>

#include "sinter/sinter.h"

#if defined(__GNUC__)
#define SN_TEST_MAYBE_UNUSED __attribute__((unused))
#else
#define SN_TEST_MAYBE_UNUSED
#endif

static int g_passed = 0;
static int g_failed = 0;

static SN_TEST_MAYBE_UNUSED void check(int ok, const char *what, int line) {
  if (ok) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL line %d: %s\n", line, what);
  }
}
#define CHECK(cond) check((cond) ? 1 : 0, #cond, __LINE__)

static SN_TEST_MAYBE_UNUSED int contains(const char *s, const char *sub) { return s != NULL && strstr(s, sub) != NULL; }

/* Checks that `*e` is an error of `code` with a non-empty message containing `sub`, frees it and
   resets *e to NULL (ready for the next call). */
static SN_TEST_MAYBE_UNUSED void expect_error(sn_error **e, sn_code code, const char *sub, int line) {
  if (*e == NULL) {
    g_failed++;
    printf("FAIL line %d: expected an error (code %d, \"%s\"), got none\n", line, (int)code, sub);
    return;
  }
  if (sn_error_code(*e) == code && sn_error_message(*e)[0] != '\0' && contains(sn_error_message(*e), sub)) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL line %d: expected code %d containing \"%s\", got code %d: %s\n", line, (int)code, sub,
           (int)sn_error_code(*e), sn_error_message(*e));
  }
  sn_error_free(*e);
  *e = NULL;
}
#define EXPECT_ERROR(e, code, sub) expect_error(&(e), (code), (sub), __LINE__)

/* No error so far; prints it (and resets it) otherwise. */
static SN_TEST_MAYBE_UNUSED void expect_ok(sn_error **e, int line) {
  if (*e == NULL) {
    g_passed++;
    return;
  }
  g_failed++;
  printf("FAIL line %d: unexpected error %d: %s\n", line, (int)sn_error_code(*e), sn_error_message(*e));
  sn_error_free(*e);
  *e = NULL;
}
#define EXPECT_OK(e) expect_ok(&(e), __LINE__)

/* Checks a string result against a substring, then frees it. */
static SN_TEST_MAYBE_UNUSED void expect_text(char *s, const char *sub, int line) {
  if (contains(s, sub)) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL line %d: expected text containing \"%s\", got: %.200s\n", line, sub, s ? s : "(null)");
  }
  sn_string_free(s);
}
#define EXPECT_TEXT(s, sub) expect_text((s), (sub), __LINE__)

/* Prints the totals; the program's exit status. */
static SN_TEST_MAYBE_UNUSED int sn_test_report(void) {
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

#endif /* SINTER_TESTS_CAPI_CHECK_H */
