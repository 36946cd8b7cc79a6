/* tests/abi/test_abi_c99.c -- the public headers compile as strict C99
 * (-std=c99 -pedantic -Werror) and need nothing but the C library. */
#include <t4a/gpu_backend_v1.h>
#include <t4a/gpu_loader.h>
#include <t4a/gpu_ipc.h> /* the POSIX helper compiles here too */

#include <stdio.h>
#include <string.h>

int main(void) {
  t4a_device_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (strcmp(t4a_status_name(T4A_ENODEVICE), "T4A_ENODEVICE") != 0)
    return 1;
  printf("C99 header check: device info %u bytes\n", (unsigned)info.struct_size);
  return 0;
}
