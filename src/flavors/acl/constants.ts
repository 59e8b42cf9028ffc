/**
 * Ascend ACL's numbers, under their C names (CANN's acl_base.h, acl_rt.h and
 * error_codes/rt_error_codes.h).
 */

// --- aclError: ACL layer (acl_base.h) ------------------------------------------
export const ACL_SUCCESS = 0;
export const ACL_ERROR_NONE = 0;
export const ACL_ERROR_INVALID_PARAM = 100000;
export const ACL_ERROR_UNINITIALIZE = 100001;
export const ACL_ERROR_REPEAT_INITIALIZE = 100002;
export const ACL_ERROR_REPEAT_FINALIZE = 100037;
export const ACL_ERROR_BAD_ALLOC = 200000;
export const ACL_ERROR_API_NOT_SUPPORT = 200001;
export const ACL_ERROR_INVALID_DEVICE = 200002;
export const ACL_ERROR_MEMORY_ADDRESS_UNALIGNED = 200003;
export const ACL_ERROR_RESOURCE_NOT_MATCH = 200004;
export const ACL_ERROR_INVALID_RESOURCE_HANDLE = 200005;
export const ACL_ERROR_FEATURE_UNSUPPORTED = 200006;
export const ACL_ERROR_STORAGE_OVER_LIMIT = 300000;
export const ACL_ERROR_INTERNAL_ERROR = 500000;
export const ACL_ERROR_FAILURE = 500001;
export const ACL_ERROR_RT_FAILURE = 500003;
export const ACL_ERROR_DRV_FAILURE = 500004;

// --- aclError: runtime layer (rt_error_codes.h), what ACL_GET_ERRCODE_RTS passes up ----
export const ACL_RT_SUCCESS = 0;
export const ACL_ERROR_RT_PARAM_INVALID = 107000;
export const ACL_ERROR_RT_INVALID_DEVICEID = 107001;
export const ACL_ERROR_RT_CONTEXT_NULL = 107002;
export const ACL_ERROR_RT_STREAM_CONTEXT = 107003;
export const ACL_ERROR_RT_ADDR_UNALIGNED = 107008;
export const ACL_ERROR_RT_INVALID_MEMORY_TYPE = 107016;
export const ACL_ERROR_RT_INVALID_HANDLE = 107017;
export const ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000;
export const ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;
export const ACL_ERROR_RT_MEMORY_FREE = 207002;
export const ACL_ERROR_RT_NO_DEVICE = 207004;
export const ACL_ERROR_RT_NO_PERMISSION = 207006;
export const ACL_ERROR_RT_INTERNAL_ERROR = 507000;
/** A reset of a device whose aclrtSetDevice count is 0 (runtime's RT_ERROR_CONTEXT_DEL). */
export const ACL_ERROR_RT_CONTEXT_RELEASE_ERROR = 507007;
export const ACL_ERROR_RT_DEVICE_MEM_ERROR = 507053;

/** aclError -> its C name, for aclGetRecentErrMsg's text. */
export const ACL_ERROR_NAMES: ReadonlyMap<number, string> = new Map([
  [ACL_SUCCESS, 'ACL_SUCCESS'],
  [ACL_ERROR_INVALID_PARAM, 'ACL_ERROR_INVALID_PARAM'],
  [ACL_ERROR_UNINITIALIZE, 'ACL_ERROR_UNINITIALIZE'],
  [ACL_ERROR_REPEAT_INITIALIZE, 'ACL_ERROR_REPEAT_INITIALIZE'],
  [ACL_ERROR_REPEAT_FINALIZE, 'ACL_ERROR_REPEAT_FINALIZE'],
  [ACL_ERROR_BAD_ALLOC, 'ACL_ERROR_BAD_ALLOC'],
  [ACL_ERROR_API_NOT_SUPPORT, 'ACL_ERROR_API_NOT_SUPPORT'],
  [ACL_ERROR_INVALID_DEVICE, 'ACL_ERROR_INVALID_DEVICE'],
  [ACL_ERROR_MEMORY_ADDRESS_UNALIGNED, 'ACL_ERROR_MEMORY_ADDRESS_UNALIGNED'],
  [ACL_ERROR_RESOURCE_NOT_MATCH, 'ACL_ERROR_RESOURCE_NOT_MATCH'],
  [ACL_ERROR_INVALID_RESOURCE_HANDLE, 'ACL_ERROR_INVALID_RESOURCE_HANDLE'],
  [ACL_ERROR_FEATURE_UNSUPPORTED, 'ACL_ERROR_FEATURE_UNSUPPORTED'],
  [ACL_ERROR_STORAGE_OVER_LIMIT, 'ACL_ERROR_STORAGE_OVER_LIMIT'],
  [ACL_ERROR_INTERNAL_ERROR, 'ACL_ERROR_INTERNAL_ERROR'],
  [ACL_ERROR_FAILURE, 'ACL_ERROR_FAILURE'],
  [ACL_ERROR_RT_FAILURE, 'ACL_ERROR_RT_FAILURE'],
  [ACL_ERROR_DRV_FAILURE, 'ACL_ERROR_DRV_FAILURE'],
  [ACL_ERROR_RT_PARAM_INVALID, 'ACL_ERROR_RT_PARAM_INVALID'],
  [ACL_ERROR_RT_INVALID_DEVICEID, 'ACL_ERROR_RT_INVALID_DEVICEID'],
  [ACL_ERROR_RT_CONTEXT_NULL, 'ACL_ERROR_RT_CONTEXT_NULL'],
  [ACL_ERROR_RT_STREAM_CONTEXT, 'ACL_ERROR_RT_STREAM_CONTEXT'],
  [ACL_ERROR_RT_ADDR_UNALIGNED, 'ACL_ERROR_RT_ADDR_UNALIGNED'],
  [ACL_ERROR_RT_INVALID_MEMORY_TYPE, 'ACL_ERROR_RT_INVALID_MEMORY_TYPE'],
  [ACL_ERROR_RT_INVALID_HANDLE, 'ACL_ERROR_RT_INVALID_HANDLE'],
  [ACL_ERROR_RT_FEATURE_NOT_SUPPORT, 'ACL_ERROR_RT_FEATURE_NOT_SUPPORT'],
  [ACL_ERROR_RT_MEMORY_ALLOCATION, 'ACL_ERROR_RT_MEMORY_ALLOCATION'],
  [ACL_ERROR_RT_MEMORY_FREE, 'ACL_ERROR_RT_MEMORY_FREE'],
  [ACL_ERROR_RT_NO_DEVICE, 'ACL_ERROR_RT_NO_DEVICE'],
  [ACL_ERROR_RT_NO_PERMISSION, 'ACL_ERROR_RT_NO_PERMISSION'],
  [ACL_ERROR_RT_INTERNAL_ERROR, 'ACL_ERROR_RT_INTERNAL_ERROR'],
  [ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, 'ACL_ERROR_RT_CONTEXT_RELEASE_ERROR'],
  [ACL_ERROR_RT_DEVICE_MEM_ERROR, 'ACL_ERROR_RT_DEVICE_MEM_ERROR'],
]);

// --- aclrtMemLocationType -------------------------------------------------------------
/** acl_rt.h marks HOST "reserved, current version not support"; newer CANN documents host allocations. */
export const ACL_MEM_LOCATION_TYPE_HOST = 0;
export const ACL_MEM_LOCATION_TYPE_DEVICE = 1;
export const ACL_MEM_LOCATION_TYPE_UNREGISTERED = 2;
export const ACL_MEM_LOCATION_TYPE_MANAGED = 3;
export const ACL_MEM_LOCATION_TYPE_HOST_NUMA = 4;

// --- aclrtMemAllocationType / aclrtMemHandleType / aclrtMemSharedHandleType -------------
export const ACL_MEM_ALLOCATION_TYPE_PINNED = 0;
export const ACL_MEM_HANDLE_TYPE_NONE = 0;
export const ACL_MEM_HANDLE_TYPE_POSIX = 2;
export const ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT = 0x1;
export const ACL_MEM_SHARE_HANDLE_TYPE_FABRIC = 0x2;

// --- aclrtMemAttr ------------------------------------------------------------------------
export const ACL_DDR_MEM = 0;
export const ACL_HBM_MEM = 1;
export const ACL_DDR_MEM_HUGE = 2;
export const ACL_DDR_MEM_NORMAL = 3;
export const ACL_HBM_MEM_HUGE = 4;
export const ACL_HBM_MEM_NORMAL = 5;
export const ACL_DDR_MEM_P2P_HUGE = 6;
export const ACL_DDR_MEM_P2P_NORMAL = 7;
export const ACL_HBM_MEM_P2P_HUGE = 8;
export const ACL_HBM_MEM_P2P_NORMAL = 9;
export const ACL_HBM_MEM_HUGE1G = 10;
export const ACL_HBM_MEM_P2P_HUGE1G = 11;
export const ACL_MEM_NORMAL = 12;
export const ACL_MEM_HUGE = 13;
export const ACL_MEM_HUGE1G = 14;
export const ACL_MEM_P2P_NORMAL = 15;
export const ACL_MEM_P2P_HUGE = 16;
export const ACL_MEM_P2P_HUGE1G = 17;

// --- aclrtMemGranularityOptions -----------------------------------------------------------
export const ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM = 0;
export const ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1;
export const ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF = 0xffff;

// --- aclrtMemAccessFlags ------------------------------------------------------------------
export const ACL_RT_MEM_ACCESS_FLAGS_NONE = 0x0;
export const ACL_RT_MEM_ACCESS_FLAGS_READ = 0x1;
export const ACL_RT_MEM_ACCESS_FLAGS_READWRITE = 0x3;

// --- aclrtMemExportToShareableHandle flags (acl_rt.h) ---------------------------------------
export const ACL_RT_VMM_EXPORT_FLAG_DEFAULT = 0x0;
export const ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION = 0x1;

// --- aclrtMemcpyKind -------------------------------------------------------------------------
export const ACL_MEMCPY_HOST_TO_HOST = 0;
export const ACL_MEMCPY_HOST_TO_DEVICE = 1;
export const ACL_MEMCPY_DEVICE_TO_HOST = 2;
export const ACL_MEMCPY_DEVICE_TO_DEVICE = 3;
export const ACL_MEMCPY_DEFAULT = 4;
export const ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5;
export const ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6;
export const ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7;

// --- aclrtMemMallocPolicy ----------------------------------------------------------------------
export const ACL_MEM_MALLOC_HUGE_FIRST = 0;
export const ACL_MEM_MALLOC_HUGE_ONLY = 1;
export const ACL_MEM_MALLOC_NORMAL_ONLY = 2;
export const ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3;
export const ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4;
export const ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5;
export const ACL_MEM_MALLOC_HUGE1G_ONLY = 6;
export const ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7;
export const ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100;
export const ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000;
export const ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000;

/** aclrtMalloc's alignment: sizes round up to 32 bytes, then 32 bytes of padding are added (aclrtMalloc docs). */
export const ACL_MALLOC_ALIGN = 32;
export const ACL_MALLOC_PADDING = 32;

// --- IPC by key (acl_rt.h: aclrtIpcMemGetExportKey / aclrtIpcMemImportByKey) -------------------
export const ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT = 0x0;
export const ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION = 0x1;
export const ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT = 0x0;
export const ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS = 0x1;
/** aclrtIpcMemGetExportKey's len: the reference fixes it at 65 (64 characters and the NUL). */
export const ACL_IPC_KEY_LEN = 65;

// aclrtCreateEventWithFlag flags and aclrtEventRecordedStatus (acl_rt.h)
export const ACL_EVENT_SYNC = 0x1;
export const ACL_EVENT_CAPTURE_STREAM_PROGRESS = 0x2;
export const ACL_EVENT_TIME_LINE = 0x8;
export const ACL_EVENT_RECORDED_STATUS_NOT_READY = 0;
export const ACL_EVENT_RECORDED_STATUS_COMPLETE = 1;
