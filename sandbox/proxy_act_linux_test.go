package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// runNetAct performs the network actions of runAct; ok is false for any
// other action.
func runNetAct(args []string) (code int, ok bool) {
	var err error
	switch args[0] {
	case "udp":
		// One datagram to args[1].
		var c net.Conn
		c, err = net.Dial("udp", args[1])
		if err == nil {
			_, err = c.Write([]byte("from the sandbox"))
			c.Close()
		}
	case "lookup":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var addrs []string
		addrs, err = net.DefaultResolver.LookupHost(ctx, args[1])
		cancel()
		if err == nil {
			fmt.Println("ok", strings.Join(addrs, " "))
			return 0, true
		}
	case "bind":
		var l net.Listener
		l, err = net.Listen("tcp", args[1])
		if err == nil {
			l.Close()
		}
	case "listeners":
		// How many of this process's descriptors are listening sockets.
		n := 0
		for fd := 0; fd < 1024; fd++ {
			if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err == nil && v == 1 {
				n++
			}
		}
		fmt.Println(n)
		return 0, true
	case "get":
		// A Go client that honours the proxy variables, as most do.
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
		var resp *http.Response
		resp, err = c.Get(args[1])
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("%d %s\n", resp.StatusCode, b)
			return 0, true
		}
	default:
		return 0, false
	}
	fmt.Println(result(err))
	return 0, true
}
