package remote

// Held is how many output bytes of lossless streams the subscription
// holds, not yet taken.
func (s *Subscription) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.pend {
		n += v
	}
	return n
}
