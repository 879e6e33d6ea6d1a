// Package childexit waits for a child process to exit without reaping it.
//
// The zombie keeps its PID, and with it its process group ID, reserved
// until its parent reaps it, so that signalling the group meanwhile
// cannot hit a stranger that reused the number. The terminal runtime
// waits this way for the commands it starts, and so does the sandbox
// helper for the commands it starts for the runtime.
package childexit
