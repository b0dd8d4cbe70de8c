package tokens_test

import "time"

var epoch = time.Now()

func nanotime() int64 { return int64(time.Since(epoch)) }
