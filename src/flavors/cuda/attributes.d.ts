/** The value of `attribute` on a device named `deviceName`, or undefined when it is not known. */
export declare function deviceAttribute(deviceName: string, attribute: number): number | undefined;
/** True for a CUdevice_attribute cuda.h defines (1 to 143, some numbers unused). */
export declare function isDeviceAttribute(attribute: number): boolean;
