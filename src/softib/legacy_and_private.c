// Exported symbols that softib provides only so that its symbol table matches Debian's
// libibverbs.so.1 (rdma-core 44) exactly:
//  - the IBVERBS_1.0 compatibility versions of the verbs, kept by rdma-core for binaries built
//    before 2006 against a different structure layout; softib refuses them with ENOSYS;
//  - IBVERBS_PRIVATE_34, the interface between libibverbs and its kernel-driver providers; softib
//    has no providers, so these report EOPNOTSUPP;
//  - the sysfs helpers, which work for real files (ibv_get_sysfs_path is device.cpp's).
// Written in C and without verbs.h: most of these have no public prototype.
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define EXPORTED __attribute__((visibility("default")))

// A legacy entry point under its old version only (name@IBVERBS_1.0, not the default @@).
#define LEGACY_POINTER(name)                                             \
  EXPORTED void* softib_legacy_##name(void) { errno = ENOSYS; return NULL; }      \
  __asm__(".symver softib_legacy_" #name "," #name "@IBVERBS_1.0");
#define LEGACY_INT(name)                                                 \
  EXPORTED int softib_legacy_##name(void) { errno = ENOSYS; return ENOSYS; }      \
  __asm__(".symver softib_legacy_" #name "," #name "@IBVERBS_1.0");
#define LEGACY_VOID(name)                                                \
  EXPORTED void softib_legacy_##name(void) {}                                     \
  __asm__(".symver softib_legacy_" #name "," #name "@IBVERBS_1.0");
#define PROVIDER_ONLY(name) \
  EXPORTED int name(void) { errno = EOPNOTSUPP; return EOPNOTSUPP; }

LEGACY_VOID(ibv_ack_async_event)
LEGACY_VOID(ibv_ack_cq_events)
LEGACY_POINTER(ibv_alloc_pd)
LEGACY_INT(ibv_attach_mcast)
LEGACY_INT(ibv_close_device)
LEGACY_POINTER(ibv_create_ah)
LEGACY_POINTER(ibv_create_cq)
LEGACY_POINTER(ibv_create_qp)
LEGACY_POINTER(ibv_create_srq)
LEGACY_INT(ibv_dealloc_pd)
LEGACY_INT(ibv_dereg_mr)
LEGACY_INT(ibv_destroy_ah)
LEGACY_INT(ibv_destroy_cq)
LEGACY_INT(ibv_destroy_qp)
LEGACY_INT(ibv_destroy_srq)
LEGACY_INT(ibv_detach_mcast)
LEGACY_VOID(ibv_free_device_list)
LEGACY_INT(ibv_get_async_event)
LEGACY_INT(ibv_get_cq_event)
LEGACY_INT(ibv_get_device_guid)
LEGACY_POINTER(ibv_get_device_list)
LEGACY_POINTER(ibv_get_device_name)
LEGACY_INT(ibv_modify_qp)
LEGACY_INT(ibv_modify_srq)
LEGACY_POINTER(ibv_open_device)
LEGACY_INT(ibv_query_device)
LEGACY_INT(ibv_query_gid)
LEGACY_INT(ibv_query_pkey)
LEGACY_INT(ibv_query_port)
LEGACY_INT(ibv_query_qp)
LEGACY_INT(ibv_query_srq)
LEGACY_POINTER(ibv_reg_mr)
LEGACY_INT(ibv_resize_cq)

// ibv_register_driver@IBVERBS_1.1: the pre-2017 provider registration; no providers here.
EXPORTED void softib_legacy_register_driver(void) {}
__asm__(".symver softib_legacy_register_driver,ibv_register_driver@IBVERBS_1.1");

PROVIDER_ONLY(__ioctl_final_num_attrs)
PROVIDER_ONLY(execute_ioctl)
PROVIDER_ONLY(ibv_cmd_advise_mr)
PROVIDER_ONLY(ibv_cmd_alloc_dm)
PROVIDER_ONLY(ibv_cmd_alloc_mw)
PROVIDER_ONLY(ibv_cmd_alloc_pd)
PROVIDER_ONLY(ibv_cmd_attach_mcast)
PROVIDER_ONLY(ibv_cmd_close_xrcd)
PROVIDER_ONLY(ibv_cmd_create_ah)
PROVIDER_ONLY(ibv_cmd_create_counters)
PROVIDER_ONLY(ibv_cmd_create_cq)
PROVIDER_ONLY(ibv_cmd_create_cq_ex)
PROVIDER_ONLY(ibv_cmd_create_flow)
PROVIDER_ONLY(ibv_cmd_create_flow_action_esp)
PROVIDER_ONLY(ibv_cmd_create_qp)
PROVIDER_ONLY(ibv_cmd_create_qp_ex)
PROVIDER_ONLY(ibv_cmd_create_qp_ex2)
PROVIDER_ONLY(ibv_cmd_create_rwq_ind_table)
PROVIDER_ONLY(ibv_cmd_create_srq)
PROVIDER_ONLY(ibv_cmd_create_srq_ex)
PROVIDER_ONLY(ibv_cmd_create_wq)
PROVIDER_ONLY(ibv_cmd_dealloc_mw)
PROVIDER_ONLY(ibv_cmd_dealloc_pd)
PROVIDER_ONLY(ibv_cmd_dereg_mr)
PROVIDER_ONLY(ibv_cmd_destroy_ah)
PROVIDER_ONLY(ibv_cmd_destroy_counters)
PROVIDER_ONLY(ibv_cmd_destroy_cq)
PROVIDER_ONLY(ibv_cmd_destroy_flow)
PROVIDER_ONLY(ibv_cmd_destroy_flow_action)
PROVIDER_ONLY(ibv_cmd_destroy_qp)
PROVIDER_ONLY(ibv_cmd_destroy_rwq_ind_table)
PROVIDER_ONLY(ibv_cmd_destroy_srq)
PROVIDER_ONLY(ibv_cmd_destroy_wq)
PROVIDER_ONLY(ibv_cmd_detach_mcast)
PROVIDER_ONLY(ibv_cmd_free_dm)
PROVIDER_ONLY(ibv_cmd_get_context)
PROVIDER_ONLY(ibv_cmd_modify_cq)
PROVIDER_ONLY(ibv_cmd_modify_flow_action_esp)
PROVIDER_ONLY(ibv_cmd_modify_qp)
PROVIDER_ONLY(ibv_cmd_modify_qp_ex)
PROVIDER_ONLY(ibv_cmd_modify_srq)
PROVIDER_ONLY(ibv_cmd_modify_wq)
PROVIDER_ONLY(ibv_cmd_open_qp)
PROVIDER_ONLY(ibv_cmd_open_xrcd)
PROVIDER_ONLY(ibv_cmd_poll_cq)
PROVIDER_ONLY(ibv_cmd_post_recv)
PROVIDER_ONLY(ibv_cmd_post_send)
PROVIDER_ONLY(ibv_cmd_post_srq_recv)
PROVIDER_ONLY(ibv_cmd_query_context)
PROVIDER_ONLY(ibv_cmd_query_device_any)
PROVIDER_ONLY(ibv_cmd_query_mr)
PROVIDER_ONLY(ibv_cmd_query_port)
PROVIDER_ONLY(ibv_cmd_query_qp)
PROVIDER_ONLY(ibv_cmd_query_srq)
PROVIDER_ONLY(ibv_cmd_read_counters)
PROVIDER_ONLY(ibv_cmd_reg_dm_mr)
PROVIDER_ONLY(ibv_cmd_reg_dmabuf_mr)
PROVIDER_ONLY(ibv_cmd_reg_mr)
PROVIDER_ONLY(ibv_cmd_req_notify_cq)
PROVIDER_ONLY(ibv_cmd_rereg_mr)
PROVIDER_ONLY(ibv_cmd_resize_cq)
PROVIDER_ONLY(verbs_open_device)

EXPORTED bool verbs_allow_disassociate_destroy;
EXPORTED void* _verbs_init_and_alloc_context(void) { errno = EOPNOTSUPP; return NULL; }
EXPORTED void verbs_register_driver_34(void) {}
EXPORTED void verbs_set_ops(void) {}
EXPORTED void verbs_uninit_context(void) {}
EXPORTED void verbs_init_cq(void) {}
EXPORTED void __verbs_log(void) {}

// Kernel-ABI marshalling helpers (IBVERBS_1.0/1.1): only providers talking to the kernel use them.
EXPORTED void ibv_copy_path_rec_from_kern(void) {}
EXPORTED void ibv_copy_path_rec_to_kern(void) {}
EXPORTED void ibv_copy_qp_attr_from_kern(void) {}
EXPORTED void ibv_copy_ah_attr_from_kern(void) {}

// Reads one sysfs-style attribute file; strips the trailing newline like the original.
EXPORTED int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  char path[4096];
  if (!size || snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size);
  close(fd);
  if (n <= 0) return -1;
  if ((size_t)n == size) --n;
  if (n > 0 && buf[n - 1] == '\n') --n;
  buf[n] = 0;
  return (int)n;
}

EXPORTED int ibv_read_ibdev_sysfs_file(char* buf, size_t size, const char* fmt, ...) {
  (void)buf; (void)size; (void)fmt;
  errno = ENOENT;  // no kernel device, no sysfs directory
  return -1;
}

