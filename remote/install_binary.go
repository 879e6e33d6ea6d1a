package remote

import (
	"debug/elf"
	"debug/macho"
	"fmt"
	"strings"
)

// binaryInfo is what an executable's header says of where it runs.
type binaryInfo struct {
	goos, goarch string
	// interp is the dynamic loader a dynamically linked ELF binary needs
	// (PT_INTERP, e.g. /lib64/ld-linux-x86-64.so.2); "" for a static one.
	interp string
}

func (b binaryInfo) platform() string { return b.goos + "/" + b.goarch }

// readBinary reads the OS, architecture and dynamic loader of an ELF or
// Mach-O executable.
func readBinary(path string) (binaryInfo, error) {
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		return elfInfo(path, f)
	}
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		info := binaryInfo{goos: "darwin"}
		switch f.Cpu {
		case macho.CpuAmd64:
			info.goarch = "amd64"
		case macho.CpuArm64:
			info.goarch = "arm64"
		default:
			return info, fmt.Errorf("%s: a Mach-O executable for CPU %v", path, f.Cpu)
		}
		return info, nil
	}
	return binaryInfo{}, fmt.Errorf("%s is neither an ELF nor a Mach-O executable", path)
}

func elfInfo(path string, f *elf.File) (binaryInfo, error) {
	var info binaryInfo
	switch f.OSABI {
	case elf.ELFOSABI_NONE, elf.ELFOSABI_LINUX:
		info.goos = "linux"
		// Go marks OpenBSD and NetBSD binaries with a note, not the ABI.
		for _, s := range f.Sections {
			switch s.Name {
			case ".note.openbsd.ident":
				info.goos = "openbsd"
			case ".note.netbsd.ident":
				info.goos = "netbsd"
			}
		}
	case elf.ELFOSABI_FREEBSD:
		info.goos = "freebsd"
	default:
		return info, fmt.Errorf("%s: an ELF executable for OS ABI %v", path, f.OSABI)
	}
	switch f.Machine {
	case elf.EM_X86_64:
		info.goarch = "amd64"
	case elf.EM_AARCH64:
		info.goarch = "arm64"
	case elf.EM_386:
		info.goarch = "386"
	case elf.EM_ARM:
		info.goarch = "arm"
	case elf.EM_RISCV:
		info.goarch = "riscv64"
	case elf.EM_PPC64:
		info.goarch = "ppc64"
		if f.Data == elf.ELFDATA2LSB {
			info.goarch = "ppc64le"
		}
	case elf.EM_S390:
		info.goarch = "s390x"
	case elf.EM_LOONGARCH:
		info.goarch = "loong64"
	default:
		return info, fmt.Errorf("%s: an ELF executable for machine %v", path, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return info, fmt.Errorf("%s: its PT_INTERP: %v", path, err)
		}
		info.interp = strings.TrimRight(string(b), "\x00")
	}
	return info, nil
}
