package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/acpterm/acpterm/acp"
)

// MaxReadBytes bounds the content one fs/read_text_file returns. The bound
// is on what is returned, not on the file: the first lines of a huge log
// are fine, all of it is refused (ask for a range with line and limit).
// A larger answer would not fit in a peer's message limit anyway.
const MaxReadBytes = 64 << 20

// ReadTextFile serves fs/read_text_file. line is 1-based (absent or 0 means
// 1); limit is a number of lines (absent means to the end, 0 means none).
// Lines keep their endings. A line past the end gives empty content.
func (ws *Workspace) ReadTextFile(ctx context.Context, req *acp.ReadTextFileRequest) (*acp.ReadTextFileResponse, error) {
	f, err := ws.open(req.Path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	first := uint64(1)
	if req.Line != nil && *req.Line > 0 {
		first = uint64(*req.Line)
	}
	content, err := readLines(ctx, f, first, req.Limit, MaxReadBytes)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("%w: %q: the content asked for exceeds %d MiB; read it in parts with line and limit", acp.ErrInvalidParams, req.Path, MaxReadBytes>>20)
		}
		return nil, fsErr(req.Path, err)
	}
	return &acp.ReadTextFileResponse{Content: content}, nil
}

var errTooLarge = errors.New("content too large")

// readLines returns lines first, first+1, … (1-based), at most limit of
// them when limit is set, failing with errTooLarge past max bytes.
func readLines(ctx context.Context, r io.Reader, first uint64, limit *uint32, max int) (string, error) {
	if limit != nil && *limit == 0 {
		return "", nil
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var out strings.Builder
	lineNo := uint64(1)
	taken := uint64(0)
	for {
		if lineNo&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && lineNo >= first {
			if out.Len()+len(chunk) > max {
				return "", errTooLarge
			}
			out.Write(chunk)
		}
		switch {
		case err == nil:
			if lineNo >= first {
				taken++
				if limit != nil && taken >= uint64(*limit) {
					return out.String(), nil
				}
			}
			lineNo++
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer: keep reading the same line.
			// An endless one (a huge sparse file) brings no line boundary
			// to check ctx at, so each full buffer checks it.
			if err := ctx.Err(); err != nil {
				return "", err
			}
		case errors.Is(err, io.EOF):
			return out.String(), nil
		default:
			return "", err
		}
	}
}
