extension Array where Element == UInt64 {
    /// Whether this sorted array holds `value` (binary search): a floor's kept sequences.
    func sortedContains(_ value: UInt64) -> Bool {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low < count && self[low] == value
    }
}
