package ndjson_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/bridgekit/bridgekit/runtime/ndjson"
)

func ExampleReader() {
	in := "{\"n\":1}\n\n{\"n\":2}\r\n{\"n\":3}"
	r := ndjson.NewReader(strings.NewReader(in), 0)
	for {
		frame, err := r.ReadFrame()
		if err != nil {
			fmt.Println("end:", err)
			return
		}
		fmt.Printf("%s\n", frame)
	}
	// Output:
	// {"n":1}
	// {"n":2}
	// {"n":3}
	// end: EOF
}

func ExampleWriter() {
	w := ndjson.NewWriter(os.Stdout, nil)
	ctx := context.Background()
	_ = w.WriteFrame(ctx, []byte(`{"hello":"world"}`+"\n"))
	err := w.WriteFrame(ctx, []byte("{\n}\n"))
	fmt.Println(err)
	// Output:
	// {"hello":"world"}
	// ndjson: frame contains an embedded newline
}
