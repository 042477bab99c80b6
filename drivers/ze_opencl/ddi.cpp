// The entry points the Level Zero loader looks up: one *ProcAddrTable getter per table. The
// loader insists on every getter of the ze, zet and zes sets (docs/level_zero_driver.md); tables
// this driver does not implement stay null, which the loader answers with
// ZE_RESULT_ERROR_UNSUPPORTED_FEATURE. The list follows ze/zet/zes_ddi.h of Level Zero 1.4.
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include <type_traits>

// Implemented in driver.cpp, command.cpp and module.cpp.
std::remove_pointer_t<ze_pfnInit_t> zoInit;
std::remove_pointer_t<ze_pfnDriverGet_t> zoDriverGet;
std::remove_pointer_t<ze_pfnDriverGetApiVersion_t> zoDriverGetApiVersion;
std::remove_pointer_t<ze_pfnDriverGetProperties_t> zoDriverGetProperties;
std::remove_pointer_t<ze_pfnDriverGetIpcProperties_t> zoDriverGetIpcProperties;
std::remove_pointer_t<ze_pfnDriverGetExtensionProperties_t> zoDriverGetExtensionProperties;
std::remove_pointer_t<ze_pfnDeviceGet_t> zoDeviceGet;
std::remove_pointer_t<ze_pfnDeviceGetSubDevices_t> zoDeviceGetSubDevices;
std::remove_pointer_t<ze_pfnDeviceGetProperties_t> zoDeviceGetProperties;
std::remove_pointer_t<ze_pfnDeviceGetComputeProperties_t> zoDeviceGetComputeProperties;
std::remove_pointer_t<ze_pfnDeviceGetModuleProperties_t> zoDeviceGetModuleProperties;
std::remove_pointer_t<ze_pfnDeviceGetCommandQueueGroupProperties_t>
    zoDeviceGetCommandQueueGroupProperties;
std::remove_pointer_t<ze_pfnDeviceGetMemoryProperties_t> zoDeviceGetMemoryProperties;
std::remove_pointer_t<ze_pfnDeviceGetMemoryAccessProperties_t> zoDeviceGetMemoryAccessProperties;
std::remove_pointer_t<ze_pfnDeviceGetCacheProperties_t> zoDeviceGetCacheProperties;
std::remove_pointer_t<ze_pfnDeviceGetP2PProperties_t> zoDeviceGetP2PProperties;
std::remove_pointer_t<ze_pfnDeviceCanAccessPeer_t> zoDeviceCanAccessPeer;
std::remove_pointer_t<ze_pfnDeviceGetStatus_t> zoDeviceGetStatus;
std::remove_pointer_t<ze_pfnDeviceGetGlobalTimestamps_t> zoDeviceGetGlobalTimestamps;
std::remove_pointer_t<ze_pfnContextCreate_t> zoContextCreate;
std::remove_pointer_t<ze_pfnContextDestroy_t> zoContextDestroy;
std::remove_pointer_t<ze_pfnContextGetStatus_t> zoContextGetStatus;
std::remove_pointer_t<ze_pfnCommandQueueCreate_t> zoCommandQueueCreate;
std::remove_pointer_t<ze_pfnCommandQueueDestroy_t> zoCommandQueueDestroy;
std::remove_pointer_t<ze_pfnCommandQueueExecuteCommandLists_t> zoCommandQueueExecuteCommandLists;
std::remove_pointer_t<ze_pfnCommandQueueSynchronize_t> zoCommandQueueSynchronize;
std::remove_pointer_t<ze_pfnCommandListCreate_t> zoCommandListCreate;
std::remove_pointer_t<ze_pfnCommandListCreateImmediate_t> zoCommandListCreateImmediate;
std::remove_pointer_t<ze_pfnCommandListDestroy_t> zoCommandListDestroy;
std::remove_pointer_t<ze_pfnCommandListClose_t> zoCommandListClose;
std::remove_pointer_t<ze_pfnCommandListReset_t> zoCommandListReset;
std::remove_pointer_t<ze_pfnCommandListAppendBarrier_t> zoCommandListAppendBarrier;
std::remove_pointer_t<ze_pfnCommandListAppendMemoryCopy_t> zoCommandListAppendMemoryCopy;
std::remove_pointer_t<ze_pfnCommandListAppendMemoryFill_t> zoCommandListAppendMemoryFill;
std::remove_pointer_t<ze_pfnCommandListAppendSignalEvent_t> zoCommandListAppendSignalEvent;
std::remove_pointer_t<ze_pfnCommandListAppendWaitOnEvents_t> zoCommandListAppendWaitOnEvents;
std::remove_pointer_t<ze_pfnCommandListAppendLaunchKernel_t> zoCommandListAppendLaunchKernel;
std::remove_pointer_t<ze_pfnFenceCreate_t> zoFenceCreate;
std::remove_pointer_t<ze_pfnFenceDestroy_t> zoFenceDestroy;
std::remove_pointer_t<ze_pfnFenceHostSynchronize_t> zoFenceHostSynchronize;
std::remove_pointer_t<ze_pfnFenceQueryStatus_t> zoFenceQueryStatus;
std::remove_pointer_t<ze_pfnFenceReset_t> zoFenceReset;
std::remove_pointer_t<ze_pfnEventPoolCreate_t> zoEventPoolCreate;
std::remove_pointer_t<ze_pfnEventPoolDestroy_t> zoEventPoolDestroy;
std::remove_pointer_t<ze_pfnEventCreate_t> zoEventCreate;
std::remove_pointer_t<ze_pfnEventDestroy_t> zoEventDestroy;
std::remove_pointer_t<ze_pfnEventHostSignal_t> zoEventHostSignal;
std::remove_pointer_t<ze_pfnEventHostSynchronize_t> zoEventHostSynchronize;
std::remove_pointer_t<ze_pfnEventQueryStatus_t> zoEventQueryStatus;
std::remove_pointer_t<ze_pfnEventHostReset_t> zoEventHostReset;
std::remove_pointer_t<ze_pfnEventQueryKernelTimestamp_t> zoEventQueryKernelTimestamp;
std::remove_pointer_t<ze_pfnModuleCreate_t> zoModuleCreate;
std::remove_pointer_t<ze_pfnModuleDestroy_t> zoModuleDestroy;
std::remove_pointer_t<ze_pfnModuleGetKernelNames_t> zoModuleGetKernelNames;
std::remove_pointer_t<ze_pfnModuleBuildLogDestroy_t> zoModuleBuildLogDestroy;
std::remove_pointer_t<ze_pfnModuleBuildLogGetString_t> zoModuleBuildLogGetString;
std::remove_pointer_t<ze_pfnKernelCreate_t> zoKernelCreate;
std::remove_pointer_t<ze_pfnKernelDestroy_t> zoKernelDestroy;
std::remove_pointer_t<ze_pfnKernelSetGroupSize_t> zoKernelSetGroupSize;
std::remove_pointer_t<ze_pfnKernelSetIndirectAccess_t> zoKernelSetIndirectAccess;
std::remove_pointer_t<ze_pfnKernelGetIndirectAccess_t> zoKernelGetIndirectAccess;
std::remove_pointer_t<ze_pfnKernelSuggestGroupSize_t> zoKernelSuggestGroupSize;
std::remove_pointer_t<ze_pfnKernelSetArgumentValue_t> zoKernelSetArgumentValue;
std::remove_pointer_t<ze_pfnKernelGetProperties_t> zoKernelGetProperties;
std::remove_pointer_t<ze_pfnKernelGetName_t> zoKernelGetName;
std::remove_pointer_t<ze_pfnMemAllocShared_t> zoMemAllocShared;
std::remove_pointer_t<ze_pfnMemAllocDevice_t> zoMemAllocDevice;
std::remove_pointer_t<ze_pfnMemAllocHost_t> zoMemAllocHost;
std::remove_pointer_t<ze_pfnMemFree_t> zoMemFree;
std::remove_pointer_t<ze_pfnMemGetAllocProperties_t> zoMemGetAllocProperties;
std::remove_pointer_t<ze_pfnMemGetAddressRange_t> zoMemGetAddressRange;

namespace {

bool compatible(ze_api_version_t v) {
  return ZE_MAJOR_VERSION(v) == ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT);
}

}  // namespace

#define ZO_CHECK_TABLE(t)                                \
  if (!(t)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER; \
  if (!compatible(version)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION

extern "C" {

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandListProcAddrTable(ze_api_version_t version,
                                                                  ze_command_list_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnCreate = zoCommandListCreate;
  t->pfnCreateImmediate = zoCommandListCreateImmediate;
  t->pfnDestroy = zoCommandListDestroy;
  t->pfnClose = zoCommandListClose;
  t->pfnReset = zoCommandListReset;
  t->pfnAppendBarrier = zoCommandListAppendBarrier;
  t->pfnAppendMemoryCopy = zoCommandListAppendMemoryCopy;
  t->pfnAppendMemoryFill = zoCommandListAppendMemoryFill;
  t->pfnAppendSignalEvent = zoCommandListAppendSignalEvent;
  t->pfnAppendWaitOnEvents = zoCommandListAppendWaitOnEvents;
  t->pfnAppendLaunchKernel = zoCommandListAppendLaunchKernel;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandQueueProcAddrTable(ze_api_version_t version,
                                                                   ze_command_queue_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnCreate = zoCommandQueueCreate;
  t->pfnDestroy = zoCommandQueueDestroy;
  t->pfnExecuteCommandLists = zoCommandQueueExecuteCommandLists;
  t->pfnSynchronize = zoCommandQueueSynchronize;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetContextProcAddrTable(ze_api_version_t version,
                                                              ze_context_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnCreate = zoContextCreate;
  t->pfnDestroy = zoContextDestroy;
  t->pfnGetStatus = zoContextGetStatus;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceExpProcAddrTable(ze_api_version_t version,
                                                                ze_device_exp_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t version,
                                                             ze_device_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnGet = zoDeviceGet;
  t->pfnGetSubDevices = zoDeviceGetSubDevices;
  t->pfnGetProperties = zoDeviceGetProperties;
  t->pfnGetComputeProperties = zoDeviceGetComputeProperties;
  t->pfnGetModuleProperties = zoDeviceGetModuleProperties;
  t->pfnGetCommandQueueGroupProperties = zoDeviceGetCommandQueueGroupProperties;
  t->pfnGetMemoryProperties = zoDeviceGetMemoryProperties;
  t->pfnGetMemoryAccessProperties = zoDeviceGetMemoryAccessProperties;
  t->pfnGetCacheProperties = zoDeviceGetCacheProperties;
  t->pfnGetP2PProperties = zoDeviceGetP2PProperties;
  t->pfnCanAccessPeer = zoDeviceCanAccessPeer;
  t->pfnGetStatus = zoDeviceGetStatus;
  t->pfnGetGlobalTimestamps = zoDeviceGetGlobalTimestamps;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t version,
                                                             ze_driver_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnGet = zoDriverGet;
  t->pfnGetApiVersion = zoDriverGetApiVersion;
  t->pfnGetProperties = zoDriverGetProperties;
  t->pfnGetIpcProperties = zoDriverGetIpcProperties;
  t->pfnGetExtensionProperties = zoDriverGetExtensionProperties;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventExpProcAddrTable(ze_api_version_t version,
                                                               ze_event_exp_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventPoolProcAddrTable(ze_api_version_t version,
                                                                ze_event_pool_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnCreate = zoEventPoolCreate;
  t->pfnDestroy = zoEventPoolDestroy;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventProcAddrTable(ze_api_version_t version,
                                                            ze_event_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnCreate = zoEventCreate;
  t->pfnDestroy = zoEventDestroy;
  t->pfnHostSignal = zoEventHostSignal;
  t->pfnHostSynchronize = zoEventHostSynchronize;
  t->pfnQueryStatus = zoEventQueryStatus;
  t->pfnHostReset = zoEventHostReset;
  t->pfnQueryKernelTimestamp = zoEventQueryKernelTimestamp;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetFabricEdgeExpProcAddrTable(ze_api_version_t version, ze_fabric_edge_exp_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetFabricVertexExpProcAddrTable(ze_api_version_t version, ze_fabric_vertex_exp_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetFenceProcAddrTable(ze_api_version_t version,
                                                            ze_fence_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnCreate = zoFenceCreate;
  t->pfnDestroy = zoFenceDestroy;
  t->pfnHostSynchronize = zoFenceHostSynchronize;
  t->pfnQueryStatus = zoFenceQueryStatus;
  t->pfnReset = zoFenceReset;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetGlobalProcAddrTable(ze_api_version_t version,
                                                             ze_global_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnInit = zoInit;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetImageExpProcAddrTable(ze_api_version_t version,
                                                               ze_image_exp_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetImageProcAddrTable(ze_api_version_t version,
                                                            ze_image_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetKernelExpProcAddrTable(ze_api_version_t version,
                                                                ze_kernel_exp_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetKernelProcAddrTable(ze_api_version_t version,
                                                             ze_kernel_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnCreate = zoKernelCreate;
  t->pfnDestroy = zoKernelDestroy;
  t->pfnSetGroupSize = zoKernelSetGroupSize;
  t->pfnSetIndirectAccess = zoKernelSetIndirectAccess;
  t->pfnGetIndirectAccess = zoKernelGetIndirectAccess;
  t->pfnSuggestGroupSize = zoKernelSuggestGroupSize;
  t->pfnSetArgumentValue = zoKernelSetArgumentValue;
  t->pfnGetProperties = zoKernelGetProperties;
  t->pfnGetName = zoKernelGetName;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetMemProcAddrTable(ze_api_version_t version,
                                                          ze_mem_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnAllocShared = zoMemAllocShared;
  t->pfnAllocDevice = zoMemAllocDevice;
  t->pfnAllocHost = zoMemAllocHost;
  t->pfnFree = zoMemFree;
  t->pfnGetAllocProperties = zoMemGetAllocProperties;
  t->pfnGetAddressRange = zoMemGetAddressRange;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetModuleBuildLogProcAddrTable(ze_api_version_t version, ze_module_build_log_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnDestroy = zoModuleBuildLogDestroy;
  t->pfnGetString = zoModuleBuildLogGetString;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetModuleProcAddrTable(ze_api_version_t version,
                                                             ze_module_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  t->pfnCreate = zoModuleCreate;
  t->pfnDestroy = zoModuleDestroy;
  t->pfnGetKernelNames = zoModuleGetKernelNames;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetPhysicalMemProcAddrTable(ze_api_version_t version,
                                                                  ze_physical_mem_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetSamplerProcAddrTable(ze_api_version_t version,
                                                              ze_sampler_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetVirtualMemProcAddrTable(ze_api_version_t version,
                                                                 ze_virtual_mem_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetCommandListProcAddrTable(ze_api_version_t version,
                                                                   zet_command_list_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetContextProcAddrTable(ze_api_version_t version,
                                                               zet_context_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetDebugProcAddrTable(ze_api_version_t version,
                                                             zet_debug_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetDeviceProcAddrTable(ze_api_version_t version,
                                                              zet_device_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetKernelProcAddrTable(ze_api_version_t version,
                                                              zet_kernel_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zetGetMetricGroupExpProcAddrTable(ze_api_version_t version, zet_metric_group_exp_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricGroupProcAddrTable(ze_api_version_t version,
                                                                   zet_metric_group_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricProcAddrTable(ze_api_version_t version,
                                                              zet_metric_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zetGetMetricQueryPoolProcAddrTable(ze_api_version_t version, zet_metric_query_pool_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetMetricQueryProcAddrTable(ze_api_version_t version,
                                                                   zet_metric_query_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zetGetMetricStreamerProcAddrTable(ze_api_version_t version, zet_metric_streamer_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetModuleProcAddrTable(ze_api_version_t version,
                                                              zet_module_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zetGetTracerExpProcAddrTable(ze_api_version_t version,
                                                                 zet_tracer_exp_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetDeviceProcAddrTable(ze_api_version_t version,
                                                              zes_device_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetDiagnosticsProcAddrTable(ze_api_version_t version,
                                                                   zes_diagnostics_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetDriverProcAddrTable(ze_api_version_t version,
                                                              zes_driver_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetEngineProcAddrTable(ze_api_version_t version,
                                                              zes_engine_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetFabricPortProcAddrTable(ze_api_version_t version,
                                                                  zes_fabric_port_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetFanProcAddrTable(ze_api_version_t version,
                                                           zes_fan_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetFirmwareProcAddrTable(ze_api_version_t version,
                                                                zes_firmware_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetFrequencyProcAddrTable(ze_api_version_t version,
                                                                 zes_frequency_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetLedProcAddrTable(ze_api_version_t version,
                                                           zes_led_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetMemoryProcAddrTable(ze_api_version_t version,
                                                              zes_memory_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetPerformanceFactorProcAddrTable(
    ze_api_version_t version, zes_performance_factor_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetPowerProcAddrTable(ze_api_version_t version,
                                                             zes_power_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetPsuProcAddrTable(ze_api_version_t version,
                                                           zes_psu_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetRasProcAddrTable(ze_api_version_t version,
                                                           zes_ras_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetSchedulerProcAddrTable(ze_api_version_t version,
                                                                 zes_scheduler_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetStandbyProcAddrTable(ze_api_version_t version,
                                                               zes_standby_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zesGetTemperatureProcAddrTable(ze_api_version_t version,
                                                                   zes_temperature_dditable_t* t) {
  ZO_CHECK_TABLE(t);
  return ZE_RESULT_SUCCESS;
}

}  // extern "C"
