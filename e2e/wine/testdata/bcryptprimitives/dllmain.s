# The entry point of bcryptprimitives.dll: DllMain returning TRUE. The
# DLL has no code of its own; its one export forwards (see the .def).
	.text
	.globl	DllMain
DllMain:
	movl	$1, %eax
	ret
