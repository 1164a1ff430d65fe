package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// One quantity per stdin line: prints input, OK/ERR, the JSON the API server would store,
// Value and MilliValue of the parsed quantity, then of the JSON parsed again (what the
// scheduler holds). "ADD a b ..." lines print the sum's String, Value and MilliValue.
func main() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		s := sc.Text()
		if strings.HasPrefix(s, "ADD ") {
			parts := strings.Fields(s)[1:]
			var acc resource.Quantity
			for _, p := range parts {
				q := resource.MustParse(p)
				acc.Add(q)
			}
			fmt.Printf("%s\tSUM\t%s\t%d\t%d\n", s, acc.String(), acc.Value(), acc.MilliValue())
			continue
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			fmt.Printf("%s\tERR\t%v\n", s, err)
			continue
		}
		b, _ := json.Marshal(q)
		var rt resource.Quantity
		_ = json.Unmarshal(b, &rt)
		q2 := q.DeepCopy()
		fmt.Printf("%s\tOK\t%s\t%d\t%d\t%d\t%d\n", s, string(b), q2.Value(), q.MilliValue(), rt.Value(), rt.MilliValue())
	}
}
