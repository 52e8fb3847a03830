package main

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"fmt"
)

// checkBinary is nil when data is an executable for goos/goarch: a
// statically linked 64-bit ELF (no interpreter, no shared library: built
// with CGO_ENABLED=0) on linux, a Mach-O executable on darwin, where every
// Go program links the system's libraries.
func checkBinary(data []byte, goos, goarch string) error {
	switch goos {
	case "linux":
		return checkELF(data, goarch)
	case "darwin":
		return checkMachO(data, goarch)
	}
	return fmt.Errorf("no check for GOOS %s", goos)
}

var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func checkELF(data []byte, goarch string) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	if want, ok := elfMachines[goarch]; !ok || f.Machine != want || f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("ELF for %s %s, want %s", f.Class, f.Machine, goarch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (it has an interpreter): built with cgo?")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		return fmt.Errorf("links shared libraries %q (%v): built with cgo?", libs, err)
	}
	if f.Type != elf.ET_EXEC {
		return fmt.Errorf("ELF type %s, want an executable", f.Type)
	}
	return nil
}

var machoCPUs = map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}

func checkMachO(data []byte, goarch string) error {
	f, err := macho.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not a Mach-O file: %w", err)
	}
	defer f.Close()
	if want, ok := machoCPUs[goarch]; !ok || f.Cpu != want {
		return fmt.Errorf("Mach-O for %s, want %s", f.Cpu, goarch)
	}
	if f.Type != macho.TypeExec {
		return fmt.Errorf("Mach-O type %s, want an executable", f.Type)
	}
	return nil
}
