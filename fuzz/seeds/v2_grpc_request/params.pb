
fuzz"
priority"
sequence_id("
sequence_start*
i8INT8*¬ûÿÿÿÿÿÿÿÿ