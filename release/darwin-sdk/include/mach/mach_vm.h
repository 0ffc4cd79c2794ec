/*
 * The one declaration of <mach/mach_vm.h> that contextd's dependencies
 * use (prometheus/client_golang process_collector_mem_cgo_darwin.c calls
 * mach_vm_region), for zig cc, whose macOS headers lack this file. The
 * function is exported by libSystem (zig's libSystem.tbd lists it); the
 * prototype is the one Apple documents for mach_vm_region(3).
 */
#ifndef CONTEXTD_MACH_VM_H
#define CONTEXTD_MACH_VM_H
#include <mach/mach_types.h>
#include <mach/vm_region.h>
kern_return_t mach_vm_region(vm_map_t target_task, mach_vm_address_t *address, mach_vm_size_t *size,
	vm_region_flavor_t flavor, vm_region_info_t info, mach_msg_type_number_t *infoCnt, mach_port_t *object_name);
#endif
