/** `vmmkit/acl`: the Ascend ACL front end alone, with acl_rt.h's constants under their C names. */
export {
  ACL_FUNCTIONS,
  AclFlavor,
  type aclrtMemAccessDesc,
  type aclrtMemLocation,
  type aclrtPhysicalMemProp,
} from '../flavors/acl/acl.js';
export * from '../flavors/acl/constants.js';
export { ACL_ERROR_TABLE } from '../flavors/acl/error-table.js';
export { type AclOptions, createAcl, type FlavorOptions } from './processes.js';
