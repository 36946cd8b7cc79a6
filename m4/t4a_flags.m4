# T4A_CHECK_CFLAG(FLAG, VARIABLE): append FLAG to VARIABLE when the C compiler
# accepts it (with -Werror, so that unknown warnings are not kept).
AC_DEFUN([T4A_CHECK_CFLAG], [
  AS_VAR_PUSHDEF([cache], [t4a_cv_cflag_$1])
  AC_CACHE_CHECK([whether $CC accepts $1], [cache], [
    save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $1"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])], [AS_VAR_SET([cache], [yes])],
                      [AS_VAR_SET([cache], [no])])
    CFLAGS=$save_CFLAGS])
  AS_VAR_IF([cache], [yes], [$2="${$2:+${$2} }$1"])
  AS_VAR_POPDEF([cache])
])

# T4A_CHECK_CFLAGS(VARIABLE, FLAGS): T4A_CHECK_CFLAG for each of FLAGS.
AC_DEFUN([T4A_CHECK_CFLAGS], [
  m4_foreach_w([flag], [$2], [T4A_CHECK_CFLAG(flag, [$1])])
])

# AX_T4A_PTHREAD: make -pthread part of CFLAGS and LIBS.
AC_DEFUN([AX_T4A_PTHREAD], [
  T4A_CHECK_CFLAG([-pthread], [T4A_PTHREAD_CFLAGS])
  AS_IF([test -z "$T4A_PTHREAD_CFLAGS"],
    [AC_SEARCH_LIBS([pthread_create], [pthread], [], [AC_MSG_ERROR([POSIX threads are required])])])
  AC_SUBST([T4A_PTHREAD_CFLAGS])
])
